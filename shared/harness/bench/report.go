package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/fileio"
	"github.com/icekeeper/icekeeper/shared/harness/s3requests"
	"github.com/icekeeper/icekeeper/shared/stage"
)

// Prices used by the cost model (us-east-1, published list prices).
const (
	// LambdaArmGBSecond is AWS Lambda's arm64 price per GB-second.
	LambdaArmGBSecond = 0.0000133334
	// LambdaRequest is the price of one invocation.
	LambdaRequest = 0.0000002
	// S3Get and S3Put are the prices of one request (S3 Standard).
	S3Get = 0.0000004
	S3Put = 0.000005
	// GlueDPUHour is AWS Glue's price per DPU-hour (table optimizers).
	GlueDPUHour = 0.44
	// LambdaMBPerVCPU is the memory at which Lambda gives one full vCPU.
	LambdaMBPerVCPU = 1769
)

// Title names a table in the report: its deletes and format version, and
// its TPC-H table when it holds one.
func (t TableResult) Title() string {
	s := fmt.Sprintf("%s deletes (v%d)", t.Kind, formatVersion(t.Kind))
	if t.TPCH != nil {
		s += fmt.Sprintf(", TPC-H %s at scale factor %g", t.TPCH.Table, t.TPCH.ScaleFactor)
	}
	return s
}

// Find is the measurement of one engine at one count of processes.
func (t TableResult) Find(engine string, procs int) (Measurement, bool) {
	for _, m := range t.Measurements {
		if m.Engine == engine && m.Procs == procs {
			return m, true
		}
	}
	return Measurement{}, false
}

// Markdown renders the report: a table per input, the targets, memory and
// the cost model.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s.\n\n", r.Started.Format("2006-01-02 15:04 UTC"), r.Machine)
	if o := r.Options; o.Storage == "s3" && o.S3Latency > 0 {
		fmt.Fprintf(&b, "Every S3 request of a measured run was held %s before the emulator answered it, as S3's time to first byte (tens of milliseconds for small objects, AWS's S3 performance whitepaper): an engine that waits for each file in turn pays it on every file.\n\n", o.S3Latency)
	}
	o := r.Options
	if o.Data == DataTPCH {
		fmt.Fprintf(&b, "Input: TPC-H tables (%s) at scale factor %g, each written by Spark in %d appends and deleted from by a CDC stream, about %.0f%% of the rows (each table below says how); output files of %d MB.\n\n",
			strings.Join(o.TPCHTables, ", "), o.ScaleFactor, o.TPCHCommits, o.DeleteFraction*100, o.TargetMB)
	} else {
		fmt.Fprintf(&b, "Input: %d MB of Parquet (zstd) per table in files of about %d KB, %d partitions, %.0f%% of the rows deleted; output files of %d MB.\n\n",
			o.SizeMB, o.FileKB, o.Partitions, o.DeleteFraction*100, o.TargetMB)
	}
	if o.Repeats > 1 {
		fmt.Fprintf(&b, "Each engine ran %d times on each table, interleaved (every engine once, then again): the tables give the median run by wall time, and the spread is half the range between the slowest and the fastest run.\n\n", o.Repeats)
	}
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "### %s: %d data files, %.0f MB, %d delete files, %d live rows\n\n", t.Title(), t.InputFiles, float64(t.InputBytes)/1e6, t.DeleteFiles, t.LiveRows)
		if t.TPCH != nil {
			b.WriteString(t.TPCH.describe(t.Kind) + "\n\n")
		}
		b.WriteString("| engine | processes × cores | wall s (median) | spread | input MB/s | rows/s | CPU s | peak RSS MB | MB/s vs raw | MB/s vs iceberg-go |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, m := range t.Measurements {
			shape := fmt.Sprintf("%d × %d", m.shapeProcs(), m.shapeCores())
			vsRaw, vsIce := "", ""
			if raw, ok := t.Find("raw arrow-go", m.Procs); ok && m.Engine != "raw arrow-go" {
				vsRaw = fmt.Sprintf("%.2f", m.MBps()/raw.MBps())
			}
			if ice, ok := t.Find("iceberg-go", m.Procs); ok && (m.Engine == "icekeeper" || m.Engine == EngineSorted || m.Engine == EngineLevel || strings.HasPrefix(m.Engine, EngineGOGC)) {
				vsIce = fmt.Sprintf("%.2f", m.MBps()/ice.MBps())
			}
			cpu := fmt.Sprintf("%.1f", m.CPU.Seconds())
			if m.CoordCPU > 0 {
				cpu += fmt.Sprintf(" (+%.1f planner, committer, emulator)", m.CoordCPU.Seconds())
			}
			fmt.Fprintf(&b, "| %s | %s | %.1f | %s | %.1f | %.0f | %s | %.0f | %s | %s |\n", m.Engine, shape, m.Wall.Seconds(), spread(m), m.MBps(), m.RowsPerSec(), cpu, float64(m.PeakRSS)/(1<<20), vsRaw, vsIce)
		}
		b.WriteString("\n")
		for _, m := range t.Measurements {
			// A two-stage sort goes round twice: its reduces are sent
			// once its maps are done.
			rounds := 1
			if m.Engine == EngineTwoStage {
				rounds = 2
			}
			if m.Rounds > rounds || m.ReceiveErrors > 0 || m.RetriedReceives > 0 {
				fmt.Fprintf(&b, "%s, %d × %d: the rewriters were started %d times, %d more than its stages need (a task came back only after its visibility timeout of 60 s); %d receives failed and were tried again (last: %s), %d were sent again by the SDK. Its wall time includes that wait.\n\n",
					m.Engine, m.shapeProcs(), m.shapeCores(), m.Rounds, m.Rounds-rounds, m.ReceiveErrors, m.LastReceiveError, m.RetriedReceives)
			}
		}
		if lvl, ok := t.Find(EngineLevel, 1); ok {
			if bp, ok := t.Find("icekeeper", 1); ok {
				fmt.Fprintf(&b, "With the table's `write.parquet.compression-level` at %s: %.2fx the default level's CPU and %.2fx its wall time, one rewriter; output %.0f MB against %.0f MB (%.2fx), same input, same run.\n\n",
					r.Options.CompressionLevel, lvl.CPU.Seconds()/bp.CPU.Seconds(), lvl.Wall.Seconds()/bp.Wall.Seconds(),
					float64(lvl.OutputB)/1e6, float64(bp.OutputB)/1e6, float64(lvl.OutputB)/float64(max(bp.OutputB, 1)))
			}
		}
		for _, gogc := range r.Options.RewriterGOGC {
			g, ok := t.Find(EngineGOGC+gogc, 1)
			bp, ok2 := t.Find("icekeeper", 1)
			if ok && ok2 {
				fmt.Fprintf(&b, "With the rewriter's GOGC=%s: %.2fx Go's default's CPU, %.2fx its wall time and %.2fx its peak RSS, one rewriter; output %.0f MB against %.0f MB, same input, same run.\n\n",
					gogc, g.CPU.Seconds()/bp.CPU.Seconds(), g.Wall.Seconds()/bp.Wall.Seconds(), float64(g.PeakRSS)/float64(max(bp.PeakRSS, 1)), float64(g.OutputB)/1e6, float64(bp.OutputB)/1e6)
			}
		}
		if na, ok := t.Find(EngineNoReadAhead, 1); ok {
			if bp, ok := t.Find("icekeeper", 1); ok && na.Billed > 0 {
				fmt.Fprintf(&b, "Reading ahead: the rewriter spent %.1f s in its handler (what Lambda bills) against %.1f s without it, %.2fx, for %.2fx the CPU and %.2fx the GETs, one rewriter, same input, same run.\n\n",
					bp.Billed.Seconds(), na.Billed.Seconds(), bp.Billed.Seconds()/na.Billed.Seconds(), bp.CPU.Seconds()/na.CPU.Seconds(), ratioGets(bp, na))
			}
		}
		for _, mb := range r.Options.UploadPartMB {
			pm, ok := t.Find(EngineParts(mb), 1)
			if bp, ok2 := t.Find("icekeeper", 1); ok && ok2 && pm.Requests != nil && bp.Requests != nil {
				fmt.Fprintf(&b, "Uploading in parts of %d MiB: %d PUT-class requests against %d, %.2fx the CPU, %.2fx the time in the handler and %.2fx the peak RSS of the default's %d MiB parts, one rewriter, same input, same run.\n\n",
					mb, pm.Requests.Class(s3requests.ClassPut), bp.Requests.Class(s3requests.ClassPut), pm.CPU.Seconds()/bp.CPU.Seconds(), pm.Billed.Seconds()/max(bp.Billed.Seconds(), 1e-9), float64(pm.PeakRSS)/float64(max(bp.PeakRSS, 1)), fileio.DefaultPartBytes>>20)
			}
		}
		if srt, ok := t.Find(EngineSorted, 1); ok {
			if bp, ok := t.Find("icekeeper", 1); ok {
				fmt.Fprintf(&b, "Sorting by %s: %.2fx the bin-packing's wall time and %.2fx its CPU, one rewriter, same input, same run.\n\n", r.Options.SortColumn, srt.Wall.Seconds()/bp.Wall.Seconds(), srt.CPU.Seconds()/bp.CPU.Seconds())
			}
			if two, ok := t.Find(EngineTwoStage, 1); ok {
				fmt.Fprintf(&b, "Sorting it in two stages (a group limit of a quarter of each partition's run: maps, the exchange through the bucket, reduces): %.2fx the one-group sort's wall time, %.2fx its CPU and %.2fx its peak RSS, one rewriter, same input, same run.\n\n", two.Wall.Seconds()/srt.Wall.Seconds(), two.CPU.Seconds()/srt.CPU.Seconds(), float64(two.PeakRSS)/float64(max(srt.PeakRSS, 1)))
			}
		}
	}
	b.WriteString(r.againstSpark())
	b.WriteString(r.targets())
	if r.Memory != nil && len(r.Memory.PeakRSS) == 2 {
		m := r.Memory
		rowGroups := "row groups of iceberg-go's default 128 MB"
		if r.Options.RowGroupMB > 0 {
			rowGroups = fmt.Sprintf("row groups of %d MB (`write.parquet.row-group-size-bytes`)", r.Options.RowGroupMB)
		}
		limit := "no Go memory limit"
		if mb := r.Options.RewriterMemoryMB; mb > 0 {
			limit = fmt.Sprintf("told it has %d MB (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`), so Go's soft memory limit is %.0f MB", mb, float64(stage.MemoryLimitMB(mb)))
		}
		fmt.Fprintf(&b, "### Rewriter memory\n\nOne rewriter process, %s, writing %s.\n\n| group | peak RSS MB | CPU s | input MB per CPU s |\n|---|---|---|---|\n", limit, rowGroups)
		for i := range m.GroupBytes {
			var cpu time.Duration
			if i < len(m.CPU) {
				cpu = m.CPU[i]
			}
			fmt.Fprintf(&b, "| %.0f MB | %.0f | %.1f | %.1f |\n", float64(m.GroupBytes[i])/1e6, float64(m.PeakRSS[i])/(1<<20), cpu.Seconds(), float64(m.GroupBytes[i])/1e6/max(cpu.Seconds(), 1e-9))
		}
		fmt.Fprintf(&b, "\nA group %.1fx the size needed %.2fx the memory.\n\n",
			float64(m.GroupBytes[1])/float64(max(m.GroupBytes[0], 1)), float64(m.PeakRSS[1])/float64(max(m.PeakRSS[0], 1)))
	}
	b.WriteString(r.requests())
	b.WriteString(r.scale())
	b.WriteString(r.sweeps())
	b.WriteString(r.fanouts())
	b.WriteString(r.coldStarts())
	b.WriteString(r.busy())
	b.WriteString(r.costs())
	b.WriteString(r.bill())
	return b.String()
}

// spread renders a measurement's runs: their number and how far the
// slowest is from the fastest.
func spread(m Measurement) string {
	if len(m.Walls) < 2 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs, ±%.0f%%", len(m.Walls), 100*m.Spread()/2)
}

// shapeProcs and shapeCores: iceberg-go and Spark run in one process on
// Procs cores, the others in Procs processes of one core.
func (m Measurement) shapeProcs() int {
	if m.Engine == "iceberg-go" || m.Engine == EngineSpark {
		return 1
	}
	return m.Procs
}

func (m Measurement) shapeCores() int {
	if m.Engine == "iceberg-go" || m.Engine == EngineSpark {
		return m.Procs
	}
	return 1
}

// requests renders the S3 requests each engine sent (Storage "s3") and
// what they and the compute cost per GB of input at list prices.
func (r Report) requests() string {
	var b strings.Builder
	for _, t := range r.Tables {
		header := false
		for _, m := range t.Measurements {
			c := m.Requests
			if c == nil {
				continue
			}
			if !header {
				header = true
				fmt.Fprintf(&b, "### S3 requests: %s, %d data files and %d delete files read\n\n", t.Title(), t.InputFiles, t.DeleteFiles)
				b.WriteString("Counted by a proxy in front of the emulator's S3 that every engine's requests for the table's files go through: the data and delete files, and the metadata files, manifest lists and manifests that planning, the rewriters and the commit read (the catalog and icekeeper's job records are elsewhere). Prices: S3 Standard requests and Lambda arm64 compute at list prices; compute is the rewriters' CPU time at one vCPU (1769 MB).\n\n")
				b.WriteString("| engine | processes × cores | GET of data and delete files | GET of metadata | HEAD | PUT, POST, LIST | GETs per data or delete file | MB per upload request | requests $/GB | compute $/GB | total $/GB |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
			}
			gb := float64(t.InputBytes) / 1e9
			gets, puts := c.Class(s3requests.ClassGet), c.Class(s3requests.ClassPut)
			uploads := c.Ops[s3requests.PutObject] + c.Ops[s3requests.UploadPart]
			reqUSD := (float64(gets)*S3Get + float64(puts)*S3Put) / gb
			computeUSD := m.CPU.Seconds() * LambdaMBPerVCPU / 1024 * LambdaArmGBSecond / gb
			dataGets := c.GetsUnder("/data/")
			fmt.Fprintf(&b, "| %s | %d × %d | %d | %d | %d | %d | %.2f | %.1f | $%.5f | $%.5f | $%.5f |\n", m.Engine, m.shapeProcs(), m.shapeCores(),
				dataGets, c.Ops[s3requests.GetObject]-dataGets, c.Ops[s3requests.HeadObject], puts,
				float64(dataGets)/float64(max(t.InputFiles+t.DeleteFiles, 1)),
				float64(c.BytesUp)/1e6/float64(max(uploads, 1)), reqUSD, computeUSD, reqUSD+computeUSD)
		}
		if header {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// coldStarts renders the function binaries' starts.
func (r Report) coldStarts() string {
	if len(r.ColdStarts) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Cold start\n\nEach function binary, built as `make lambdas` builds it (static, stripped, `lambda.norpc`) for this machine, started in mode active with a deployed function's configuration (resources in the emulator, the stack's default Glue catalog, `AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1769`) against a stand-in Runtime API on loopback: the time from exec to its first request for an event. %d starts each, interleaved across the functions; on Lambda the sandbox's own start comes on top.\n\n", len(r.ColdStarts[0].Runs))
	if base := r.ColdStarts[len(r.ColdStarts)-1].Revision; base != "" {
		fmt.Fprintf(&b, "Each function's binary built at %s (the baseline) starts right after it in every round; the last column is the median's ratio.\n\n", base)
	}
	b.WriteString("| function | binary MB | median ms | fastest ms | slowest ms | goal ms | median / baseline's |\n|---|---|---|---|---|---|---|\n")
	for i, c := range r.ColdStarts {
		name, ratio := c.Function, ""
		if c.Revision != "" {
			name += " at " + c.Revision + " (baseline)"
		} else if i+1 < len(r.ColdStarts) && r.ColdStarts[i+1].Revision != "" && r.ColdStarts[i+1].Function == c.Function {
			ratio = fmt.Sprintf("%.2fx", ms64(c.Median())/ms64(r.ColdStarts[i+1].Median()))
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %.1f | 150 | %s |\n", name, float64(c.BinaryBytes)/1e6, ms64(c.Median()), ms64(slices.Min(c.Runs)), ms64(slices.Max(c.Runs)), ratio)
	}
	b.WriteString("\n")
	return b.String()
}

func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// busy renders the busy-table scenario: each format version without and
// with the rebase, side by side.
func (r Report) busy() string {
	if len(r.Busy) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Jobs under a busy writer\n\nA writer commits, every %s, 10 rows appended to each of 4 partitions and a merge-on-read delete of 8 random ids (position delete files on v2, deletion vectors on v3), while jobs plan, rewrite and commit one after another on the same table (4 partitions of 20 small files with position and equality deletes to start with). The same changes go to a twin table nothing maintains; the last column compares the two tables' row fingerprints.\n\n", r.Options.BusyInterval)
	b.WriteString("| format | concurrent deletes | jobs | committed | aborted | failed | abort rate | deletes rebased | writer commits | median job s | job / writer interval | rows = twin's |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range r.Busy {
		mode := "abort (`ICEKEEPER_REBASE_DELETES=false`)"
		if run.Rebase {
			mode = "rebase (default)"
		}
		fmt.Fprintf(&b, "| v%d | %s | %d | %d | %d | %d | %.0f%% | %d | %d | %.2f | %.2f | %t (%d rows) |\n", run.Version, mode, run.Jobs, run.Committed, run.Aborted, run.Failed,
			100*float64(run.Aborted+run.Failed)/float64(max(run.Jobs, 1)), run.DeletesRebased, run.WriterCommits, run.JobMedian.Seconds(),
			run.JobMedian.Seconds()/max(r.Options.BusyInterval.Seconds(), 1e-9), run.RowsMatch, run.Rows)
	}
	for _, run := range r.Busy {
		if run.Reasons != "" {
			fmt.Fprintf(&b, "\nv%d, %s, why jobs did not commit: %s.\n", run.Version, map[bool]string{true: "rebase", false: "abort"}[run.Rebase], run.Reasons)
		}
	}
	b.WriteString("\n")
	return b.String()
}

type target struct {
	what     string
	measured float64
	want     float64
	atMost   bool
}

func (r Report) targets() string {
	var ts []target
	for _, t := range r.Tables {
		raw1, ok1 := t.Find("raw arrow-go", 1)
		ice1, ok2 := t.Find("iceberg-go", 1)
		ice2, ok3 := t.Find("iceberg-go", 2)
		ik1, ok4 := t.Find("icekeeper", 1)
		ik2, ok5 := t.Find("icekeeper", 2)
		if !(ok1 && ok2 && ok3 && ok4 && ok5) {
			continue
		}
		want := 0.95
		if t.Kind == "equality" {
			want = 0.9
		}
		ts = append(ts,
			target{fmt.Sprintf("%s: rewriter MB/s per core vs the physical limit", t.Kind), ik1.MBps() / raw1.MBps(), want, false},
			target{fmt.Sprintf("%s: two rewriters vs one (MB/s)", t.Kind), ik2.MBps() / ik1.MBps(), 1.9, false},
			target{fmt.Sprintf("%s: pipeline wall time vs iceberg-go, two cores", t.Kind), ik2.Wall.Seconds() / ice2.Wall.Seconds(), 0.8, true},
			target{fmt.Sprintf("%s: pipeline wall time vs iceberg-go, one core", t.Kind), ik1.Wall.Seconds() / ice1.Wall.Seconds(), 1.1, true},
		)

	}
	if m := r.Memory; m != nil && len(m.PeakRSS) == 2 && m.PeakRSS[0] > 0 {
		ts = append(ts, target{fmt.Sprintf("rewriter peak memory MB, group of %.0f MB (goal for 1 GB)", float64(m.GroupBytes[1])/1e6), float64(m.PeakRSS[1]) / (1 << 20), 400, true},
			target{"rewriter memory, 4x group vs 1x group", float64(m.PeakRSS[1]) / float64(m.PeakRSS[0]), 1.2, true})
	}
	for _, p := range r.Scale {
		switch {
		case p.Stage == "planner" && p.TableFiles >= 1_000_000:
			// A million files in a minute and 1 GB; beyond, a gigabyte a
			// million (10 million files in Lambda's largest function,
			// 10,240 MB) within Lambda's 15-minute timeout.
			secs, gb := 60.0, 1.0
			if p.TableFiles > 1_000_000 {
				secs, gb = 900, float64(p.TableFiles)/1e6
			}
			ts = append(ts, target{fmt.Sprintf("planner, %d files: seconds", p.TableFiles), p.Wall.Seconds(), secs, true},
				target{fmt.Sprintf("planner, %d files: peak memory GB", p.TableFiles), float64(p.PeakRSS) / (1 << 30), gb, true})
		case p.Stage == "planner" && p.TableFiles >= 100_000:
			ts = append(ts, target{fmt.Sprintf("planner, %d files: seconds", p.TableFiles), p.Wall.Seconds(), 10, true})
		case p.Stage == "committer" && p.Files >= 10_000:
			ts = append(ts, target{fmt.Sprintf("committer, job of %d files in a table of %d: seconds", p.Files, p.TableFiles), p.Wall.Seconds(), 10, true})
			if mb := r.Options.CoordinatorMemoryMB; mb > 0 {
				// The function's memory: Lambda stops a function that goes over.
				ts = append(ts, target{fmt.Sprintf("committer, job of %d files in a table of %d: peak memory MB (the function's)", p.Files, p.TableFiles), float64(p.PeakRSS) / (1 << 20), float64(mb), true})
			}
		}
	}
	if len(ts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Targets\n\n| target | measured | goal | verdict |\n|---|---|---|---|\n")
	for _, t := range ts {
		op := "≥"
		met := t.measured >= t.want
		if t.atMost {
			op, met = "≤", t.measured <= t.want
		}
		verdict := "met"
		if !met {
			verdict = fmt.Sprintf("missed by %.0f%%", math.Abs(t.measured-t.want)/t.want*100)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %s %.2f | %s |\n", t.what, t.measured, op, t.want, verdict)
	}
	b.WriteString("\n")
	return b.String()
}

// lambdaCost is what one GB compacted costs on Lambda at a rewriter's
// measured speed on one core (position deletes): its compute at one vCPU
// and its S3 requests, counted on S3 (Storage "s3") or else estimated for
// 1 MB input files into 256 MB outputs: one GET per input file (package
// fileio) and one PUT per 32 MB upload part.
type lambdaCost struct {
	perCore, secPerGB, gbSeconds, compute, requests, total float64
	how                                                    string
}

func (r Report) lambdaCost(engine string) (lambdaCost, bool) {
	for _, t := range r.Tables {
		m, ok := t.Find(engine, 1)
		if !ok || t.Kind != "position" {
			continue
		}
		c := lambdaCost{perCore: m.MBps(), requests: 1000*S3Get + 1000/32*S3Put, how: "estimated"}
		c.secPerGB = 1000 / c.perCore
		c.gbSeconds = c.secPerGB * LambdaMBPerVCPU / 1024
		c.compute = c.gbSeconds * LambdaArmGBSecond
		if m.Requests != nil {
			gb := float64(t.InputBytes) / 1e9
			c.requests, c.how = (float64(m.Requests.Class(s3requests.ClassGet))*S3Get+float64(m.Requests.Class(s3requests.ClassPut))*S3Put)/gb, "counted"
		}
		c.total = c.compute + c.requests
		return c, true
	}
	return lambdaCost{}, false
}

func (r Report) costs() string {
	c, ok := r.lambdaCost("icekeeper")
	if !ok {
		return ""
	}
	rewriters := math.Ceil(1e6 / (c.perCore * 900))
	var b strings.Builder
	b.WriteString("### What it means on Lambda\n\n")
	fmt.Fprintf(&b, "- Measured rewriter throughput on one core (position deletes): %.1f MB/s, so one GB takes %.0f s of one vCPU.\n", c.perCore, c.secPerGB)
	fmt.Fprintf(&b, "- A rewriter at %d MB (one full vCPU on Lambda) spends %.0f GB-seconds per GB: $%.4f at the arm64 price of $%.10f per GB-second, plus about $%.4f of S3 requests (%s): **$%.4f per GB compacted** (planner and committer are a few invocations per job and add well under 1%%).\n",
		LambdaMBPerVCPU, c.gbSeconds, c.compute, LambdaArmGBSecond, c.requests, c.how, c.total)
	if l, ok := r.lambdaCost(EngineLevel); ok {
		fmt.Fprintf(&b, "- With the table's `write.parquet.compression-level` at %s: %.1f MB/s on one core, $%.4f of compute and $%.4f of S3 requests (%s): **$%.4f per GB compacted**, %.2fx the default level's.\n",
			r.Options.CompressionLevel, l.perCore, l.compute, l.requests, l.how, l.total, l.total/c.total)
	}
	fmt.Fprintf(&b, "- Compacting 1 TB within Lambda's 15 minutes needs about %.0f rewriters in parallel (1 TB / (%.1f MB/s × 900 s)), i.e. the rewriter's reserved concurrency; the job costs about $%.0f.\n", rewriters, c.perCore, c.total*1000)
	fmt.Fprintf(&b, "- AWS Glue table optimizers cost $%.2f per DPU-hour. We cannot measure Glue's DPU-hours per GB here; icekeeper is cheaper per GB as long as Glue compacts less than %.0f GB per DPU-hour.\n\n", GlueDPUHour, GlueDPUHour/c.total)
	return b.String()
}

func (r Report) scale() string {
	if len(r.Scale) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Planner and committer at scale\n\nSynthetic tables whose manifests list the files (planning and committing read only metadata), each file with the column statistics iceberg-go's writer records for the sample table's 4 columns; each stage runs in its own process against the emulator, as the Lambda function would")
	if mb := r.Options.CoordinatorMemoryMB; mb > 0 {
		fmt.Fprintf(&b, ", told it has %d MB (Go's memory limit and the planner's budget from it)", mb)
	} else {
		b.WriteString(", with no memory limit (what planning needs)")
	}
	b.WriteString(".\n\n")
	b.WriteString("| stage | table's data files | job's input files | groups | wall s | CPU s | peak RSS MB |\n|---|---|---|---|---|---|---|\n")
	for _, p := range r.Scale {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.1f | %.1f | %.0f |\n", p.Stage, p.TableFiles, p.Files, p.Groups, p.Wall.Seconds(), p.CPU.Seconds(), float64(p.PeakRSS)/(1<<20))
	}
	b.WriteString("\n")
	return b.String()
}

// againstSpark renders each table's engines per CPU-second and per wall
// second beside Spark's rewrite_data_files at the same cores, with their
// output, when Spark ran.
func (r Report) againstSpark() string {
	var b strings.Builder
	for _, t := range r.Tables {
		if _, ok := t.Find(EngineSpark, 1); !ok {
			if _, ok := t.Find(EngineSpark, 2); !ok {
				continue
			}
		}
		fmt.Fprintf(&b, "#### Against Spark: %s\n\n", t.Title())
		b.WriteString("Spark's CPU and wall time are its procedure's call alone; its JVM's start and a warm-up query came before (their CPU in brackets). icekeeper's CPU is its rewriters'; the planner, committer and emulator are in the table above.\n\n")
		b.WriteString("| engine | processes × cores | input MB per CPU s | input MB per wall s | CPU s | peak RSS MB | output MB | output files | per CPU s vs Spark | per wall s vs Spark |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, m := range t.Measurements {
			if m.Engine == "raw arrow-go" {
				continue
			}
			perCPU := float64(m.InputB) / 1e6 / max(m.CPU.Seconds(), 1e-9)
			cpu := fmt.Sprintf("%.1f", m.CPU.Seconds())
			if m.StartCPU > 0 {
				cpu += fmt.Sprintf(" (+%.1f start)", m.StartCPU.Seconds())
			}
			vsCPU, vsWall := "", ""
			if sp, ok := t.Find(EngineSpark, m.shapeProcs()*m.shapeCores()); ok && m.Engine != EngineSpark {
				spPerCPU := float64(sp.InputB) / 1e6 / max(sp.CPU.Seconds(), 1e-9)
				vsCPU = fmt.Sprintf("%.2fx", perCPU/spPerCPU)
				vsWall = fmt.Sprintf("%.2fx", m.MBps()/sp.MBps())
			}
			out := ""
			if m.OutputB > 0 {
				out = fmt.Sprintf("%.1f", float64(m.OutputB)/1e6)
			}
			fmt.Fprintf(&b, "| %s | %d × %d | %.1f | %.1f | %s | %.0f | %s | %d | %s | %s |\n", m.Engine, m.shapeProcs(), m.shapeCores(),
				perCPU, m.MBps(), cpu, float64(m.PeakRSS)/(1<<20), out, m.FilesOut, vsCPU, vsWall)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ratioGets is a's GETs over b's (1 when either was not on S3).
func ratioGets(a, b Measurement) float64 {
	if a.Requests == nil || b.Requests == nil || b.Requests.Class(s3requests.ClassGet) == 0 {
		return 1
	}
	return float64(a.Requests.Class(s3requests.ClassGet)) / float64(b.Requests.Class(s3requests.ClassGet))
}
