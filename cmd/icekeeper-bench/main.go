// Command icekeeper-bench measures icekeeper against the physical limit of
// the machine and iceberg-go's own compaction, side by side, in one run
// (see package bench). `make bench` runs it.
//
//	icekeeper-bench [--size-mb 1024] [--file-kb 1024] [--kinds position,equality] [--memory] [--out FILE] [--json]
//	icekeeper-bench --kinds "" --memory=false --planner-files "" --commit-files 0 --busy-jobs 0 --cold-starts 0 --spark-cores "" --sweep-tables 100,1000,10000 --fanout-groups 50,500
//	icekeeper-bench --data tpch [--scale-factor 1] [--tpch-tables lineitem,orders] [--tpch-cache DIR] ...
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/harness/bench"
	"github.com/icekeeper/icekeeper/shared/harness/sparkdriver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) == 3 && os.Args[1] == "child" {
		// A measured child: its arguments come on stdin.
		args, err := io.ReadAll(os.Stdin)
		if err != nil {
			fail(fmt.Errorf("child: read its arguments: %w", err))
		}
		out, err := bench.Child(ctx, os.Args[2], args)
		if err != nil {
			fmt.Fprintln(os.Stderr, "icekeeper-bench child:", err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(bench.ChildOutput{Result: out, PeakRSS: bench.SelfPeakRSS()})
		return
	}
	fs := flag.NewFlagSet("icekeeper-bench", flag.ExitOnError)
	var o bench.Options
	fs.StringVar(&o.Dir, "dir", "", "work folder for the catalog and warehouse (default: a temporary folder, removed)")
	fs.IntVar(&o.SizeMB, "size-mb", 1024, "input size of each table, in MB of Parquet")
	fs.IntVar(&o.FileKB, "file-kb", 1024, "size of the small input files, in KB")
	fs.IntVar(&o.TargetMB, "target-mb", 256, "output file size (write.target-file-size-bytes), in MB")
	fs.IntVar(&o.Partitions, "partitions", 4, "partitions per table")
	fs.Float64Var(&o.DeleteFraction, "deleted", 0.05, "fraction of rows deleted")
	kinds := fs.String("kinds", "position,dv,equality", "delete kinds to measure: position (v2), dv (v3 deletion vectors), equality")
	fs.StringVar(&o.SortColumn, "sort-column", "", "also run a sort compaction by this column (one rewriter) beside bin-packing, e.g. amount (random) or id")
	fs.StringVar(&o.CompressionLevel, "compression-level", "", "also run the pipeline (one rewriter) with the tables' write.parquet.compression-level set to this level beside the default, e.g. 1 (zstd's fastest)")
	rewriterGOGC := fs.String("rewriter-gogc", "", "also run the pipeline (one rewriter) with the rewriter process's GOGC at each of these values beside Go's default, e.g. 200,400,off")
	fs.BoolVar(&o.Memory, "memory", true, "measure rewriter memory on groups of 1x and 4x")
	plannerFiles := fs.String("planner-files", "100000,1000000", "table sizes (data files) to measure the planner on; empty to skip")
	fs.IntVar(&o.CommitFiles, "commit-files", 10000, "files replaced by the committer's job; 0 to skip")
	sweepTables := fs.String("sweep-tables", "", "fleet sizes (tables) to measure one scheduled sweep on, e.g. 100,1000,10000; empty to skip")
	sweepConcurrency := fs.String("sweep-concurrency", "", "ICEKEEPER_SWEEP_CONCURRENCY values to measure each sweep at, side by side, e.g. 1,16; empty for the default alone")
	fs.DurationVar(&o.CatalogLatency, "catalog-latency", 0, "sweeps: hold each Glue request a catalog call stands for this long (a GetTable a load), e.g. 30ms; 0 for the sql catalog's own")
	fs.DurationVar(&o.PlannerTimeout, "planner-timeout", 0, "sweeps: end each planner invocation at this deadline, as Lambda ends it at the function's timeout (the stack's is 5m); a sweep short of time leaves a cursor and is invoked again until every table is visited; 0 for no deadline")
	fs.DurationVar(&o.AWSLatency, "aws-latency", 0, "sweeps: hold each DynamoDB, SQS and EventBridge request this long (DynamoDB: single-digit milliseconds), e.g. 5ms; 0 for the emulator's own")
	fanoutGroups := fs.String("fanout-groups", "", "job sizes (groups) to measure the fan-out to rewriters and the one commit on, e.g. 50,500; empty to skip")
	fs.IntVar(&o.BusyJobs, "busy-jobs", 20, "jobs per run of the busy-table scenario (a writer committing deletes during the jobs; rebase off, then on); 0 to skip")
	fs.DurationVar(&o.BusyInterval, "busy-interval", 250*time.Millisecond, "the busy-table writer's interval between commits")
	fs.IntVar(&o.Repeats, "repeats", 3, "runs of each engine on each table, interleaved; the report gives the median run and the spread")
	fs.IntVar(&o.RowGroupMB, "row-group-mb", 0, "the memory check's table's write.parquet.row-group-size-bytes, in MB; 0 for iceberg-go's default (128 MB)")
	fs.IntVar(&o.RewriterMemoryMB, "rewriter-memory-mb", 0, "the memory rewriter processes are told they have (AWS_LAMBDA_FUNCTION_MEMORY_SIZE; Go's memory limit, and under it the rewriter's GC percent, are set from it as in the function); 0 for none")
	fs.IntVar(&o.CoordinatorMemoryMB, "coordinator-memory-mb", 0, "the memory the planner and committer processes are told they have (AWS_LAMBDA_FUNCTION_MEMORY_SIZE: Go's memory limit and the planner's memory budget are set from it as in the functions; the stack gives them 1024); 0 for none, to measure what they need")
	fs.BoolVar(&o.ReadAheadBaseline, "read-ahead-baseline", false, "also run the pipeline (one rewriter) without reading ahead (ICEKEEPER_READ_AHEAD_FILES=-1) beside the default")
	partsMB := fs.String("upload-part-mb", "", "also run the pipeline (one rewriter) uploading in parts of each of these many MiB (ICEKEEPER_UPLOAD_PART_BYTES) beside the default's, e.g. 64,128; empty to skip")
	icebergGo := fs.Bool("iceberg-go", true, "also run iceberg-go's own compaction (RewriteDataFiles) on every table")
	fs.DurationVar(&o.S3Latency, "s3-latency", 0, "--storage s3: hold each S3 request of a measured run this long, as S3's time to first byte (tens of milliseconds for small objects, AWS's S3 performance whitepaper), e.g. 30ms; 0 for the emulator's own")
	fs.StringVar(&o.Storage, "storage", "local", "where the tables live: local (a folder) or s3 (a bucket in the emulator, every engine's S3 requests counted)")
	fs.IntVar(&o.ColdStartRuns, "cold-starts", 7, "starts of each function binary to measure its cold start; 0 to skip")
	fs.StringVar(&o.ColdStartBaseline, "cold-start-baseline", "", "also start the function binaries of this git revision, interleaved with these, and compare (e.g. HEAD~1)")
	fs.StringVar(&o.Data, "data", bench.DataSynthetic, "the tables' rows: synthetic (--size-mb per table) or tpch (TPC-H tables generated by tpchgen-cli, which make tpch-setup installs, and written by Spark, which make interop-setup builds)")
	fs.Float64Var(&o.ScaleFactor, "scale-factor", 1, "--data tpch: TPC-H's scale factor (1: lineitem has 6 million rows)")
	tpchTables := fs.String("tpch-tables", "lineitem,orders", "--data tpch: the TPC-H tables, each measured for every kind")
	fs.IntVar(&o.TPCHCommits, "tpch-commits", 48, "--data tpch: the appends that write each table (one small file per month partition each)")
	fs.StringVar(&o.TPCHCache, "tpch-cache", "", "--data tpch: keep the generator's output in this folder and reuse it across runs (default: under --dir)")
	sparkCores := fs.String("spark-cores", "1,2", "also run Spark's rewrite_data_files on every table, in local[N] for each N (the Java driver that make interop-setup builds); empty to skip")
	outFile := fs.String("out", "", "also write the Markdown report to this file")
	asJSON := fs.Bool("json", false, "print JSON instead of Markdown")
	_ = fs.Parse(os.Args[1:])
	o.Kinds = strings.Split(*kinds, ",")
	if o.CompressionLevel != "" {
		if _, err := strconv.Atoi(o.CompressionLevel); err != nil {
			fail(fmt.Errorf("--compression-level: %w", err))
		}
	}
	for _, g := range strings.Split(*rewriterGOGC, ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		if _, err := strconv.Atoi(g); err != nil && g != "off" {
			fail(fmt.Errorf("--rewriter-gogc %q: want a percentage or off, as Go's GOGC", g))
		}
		o.RewriterGOGC = append(o.RewriterGOGC, g)
	}
	o.NoIcebergGo = !*icebergGo
	for _, p := range strings.Split(*partsMB, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		mb, err := strconv.Atoi(p)
		if err != nil || mb < 5 || mb > 5<<10 {
			fail(fmt.Errorf("--upload-part-mb %q: want sizes in MiB between 5 and 5120, S3's part sizes", p))
		}
		o.UploadPartMB = append(o.UploadPartMB, mb)
	}
	for _, f := range strings.Split(*plannerFiles, ",") {
		if f = strings.TrimSpace(f); f != "" {
			n, err := strconv.Atoi(f)
			if err != nil {
				fail(fmt.Errorf("--planner-files: %w", err))
			}
			o.PlannerFiles = append(o.PlannerFiles, n)
		}
	}
	var err error
	if o.SweepTables, err = counts("--sweep-tables", *sweepTables); err != nil {
		fail(err)
	}
	if o.FanoutGroups, err = counts("--fanout-groups", *fanoutGroups); err != nil {
		fail(err)
	}
	if o.SweepConcurrency, err = counts("--sweep-concurrency", *sweepConcurrency); err != nil {
		fail(err)
	}
	for _, c := range strings.Split(*sparkCores, ",") {
		if c = strings.TrimSpace(c); c != "" {
			n, err := strconv.Atoi(c)
			if err != nil || n < 1 {
				fail(fmt.Errorf("--spark-cores: %q is not a count of cores", c))
			}
			o.SparkCores = append(o.SparkCores, n)
		}
	}
	if len(o.SparkCores) > 0 || o.Data == bench.DataTPCH {
		root, err := moduleRoot()
		if err != nil {
			fail(fmt.Errorf("--spark-cores and --data tpch run the Java driver in the repository: %w", err))
		}
		o.SparkDriver = filepath.Join(root, filepath.FromSlash(sparkdriver.Dir))
	}
	if o.Data == bench.DataTPCH {
		root, err := moduleRoot()
		if err != nil {
			fail(fmt.Errorf("--data tpch runs the generator in the repository: %w", err))
		}
		o.TPCHGen = bench.TPCHGenerator(root)
		for _, t := range strings.Split(*tpchTables, ",") {
			if t = strings.TrimSpace(t); t != "" {
				o.TPCHTables = append(o.TPCHTables, t)
			}
		}
	}
	o.Progress = os.Stderr
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	o.Self = self
	if o.ColdStartRuns > 0 {
		if o.Repo, err = moduleRoot(); err != nil {
			fail(fmt.Errorf("--cold-starts builds the functions: %w", err))
		}
	}
	if o.Dir == "" {
		tmp, err := os.MkdirTemp("", "icekeeper-bench-")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(tmp)
		o.Dir = tmp
	}
	rep, err := bench.Run(ctx, o)
	if err != nil {
		fail(err)
	}
	md := rep.Markdown()
	if *outFile != "" {
		if err := os.WriteFile(*outFile, []byte(md), 0o644); err != nil {
			fail(err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		return
	}
	fmt.Print(md)
}

// counts parses a comma-separated list of positive counts.
func counts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive count", flag, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "icekeeper-bench:", err)
	os.Exit(1)
}

// moduleRoot is the icekeeper module's root, above the working folder.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/icekeeper/icekeeper\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run it inside the icekeeper repository")
		}
		dir = parent
	}
}
