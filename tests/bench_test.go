package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/bench"
	"github.com/icekeeper/icekeeper/shared/harness/catalogcalls"
	"github.com/icekeeper/icekeeper/shared/harness/sparkdriver"
	"github.com/icekeeper/icekeeper/shared/health"
)

// TestBench_SmokeRunMeasuresEveryEngine runs the benchmark harness on a
// tiny input and checks that it measured every engine on every table and
// that every engine kept the same rows. Timings are never asserted.
func TestBench_SmokeRunMeasuresEveryEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchmark binary")
	}
	rep := runBench(t, "--size-mb", "4", "--file-kb", "64", "--target-mb", "2", "--partitions", "2", "--cold-starts", "1", "--repeats", "2", "--compression-level", "1", "--spark-cores", "", "--dir", t.TempDir())
	if len(rep.Tables) != 3 {
		t.Fatalf("%d tables, want position (v2), dv (v3) and equality", len(rep.Tables))
	}
	for _, tr := range rep.Tables {
		if len(tr.Measurements) != 7 {
			t.Fatalf("%s: %d measurements, want 7 (raw, iceberg-go, icekeeper on 1 and 2, icekeeper at compression level 1)", tr.Kind, len(tr.Measurements))
		}
		// The level's run wrote other bytes than the default's: the
		// property reached the rewriter (zstd level 1 is klauspost's
		// fastest encoder, the default its default one).
		atDefault, _ := tr.Find("icekeeper", 1)
		atLevel, ok := tr.Find(bench.EngineLevel, 1)
		if !ok || atDefault.OutputB <= 0 || atLevel.OutputB <= 0 || atLevel.OutputB == atDefault.OutputB {
			t.Fatalf("%s: output %d bytes at the default level, %d at level 1 (measured: %v): want both, and different", tr.Kind, atDefault.OutputB, atLevel.OutputB, ok)
		}
		var rows []int64
		for _, m := range tr.Measurements {
			if m.Wall <= 0 || m.CPU <= 0 || m.PeakRSS <= 0 || m.InputB <= 0 {
				t.Fatalf("%s %s/%d: unmeasured %+v", tr.Kind, m.Engine, m.Procs, m)
			}
			if len(m.Walls) != 2 || (m.Wall != m.Walls[0] && m.Wall != m.Walls[1]) {
				t.Fatalf("%s %s/%d: runs %v, want 2 with the median among them", tr.Kind, m.Engine, m.Procs, m.Walls)
			}
			if m.Engine != "raw arrow-go" {
				rows = append(rows, m.RowsOut)
			}
		}
		for _, r := range rows {
			if r != rows[0] {
				t.Fatalf("%s: engines kept different row counts %v", tr.Kind, rows)
			}
		}
	}
	if rep.Memory == nil || len(rep.Memory.PeakRSS) != 2 || rep.Memory.GroupBytes[1] <= rep.Memory.GroupBytes[0] {
		t.Fatalf("memory check %+v", rep.Memory)
	}
	if len(rep.ColdStarts) != 3 {
		t.Fatalf("%d cold starts measured, want the planner's, the rewriter's and the committer's", len(rep.ColdStarts))
	}
	for _, c := range rep.ColdStarts {
		if c.BinaryBytes <= 0 || len(c.Runs) != 1 || c.Runs[0] <= 0 {
			t.Fatalf("cold start of %s unmeasured: %+v", c.Function, c)
		}
	}
}

// TestBench_SparkRunsBesideIcekeeperOnTheSameTable runs the benchmark
// with Spark's rewrite_data_files as the peer (one table, one run, local[1])
// and checks that Spark was measured on the same table and kept the same
// rows as icekeeper. Skipped when the Java driver is not built (make test
// builds it).
func TestBench_SparkRunsBesideIcekeeperOnTheSameTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchmark binary and a JVM")
	}
	if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(sparkdriver.Dir), "target", "classpath.txt")); err != nil {
		t.Skipf("SKIPPED: the Spark driver is not built (make interop-setup): %v", err)
	}
	rep := runBench(t, "--kinds", "position", "--size-mb", "4", "--file-kb", "64", "--target-mb", "2", "--partitions", "2",
		"--repeats", "1", "--memory=false", "--planner-files", "", "--commit-files", "0", "--busy-jobs", "0", "--cold-starts", "0",
		"--spark-cores", "1", "--dir", t.TempDir())
	if len(rep.Tables) != 1 {
		t.Fatalf("%d tables, want position (v2)", len(rep.Tables))
	}
	tr := rep.Tables[0]
	sp, ok := tr.Find(bench.EngineSpark, 1)
	if !ok {
		t.Fatalf("Spark was not measured: %+v", tr.Measurements)
	}
	ice, ok := tr.Find("icekeeper", 1)
	if !ok {
		t.Fatalf("icekeeper was not measured: %+v", tr.Measurements)
	}
	if sp.Wall <= 0 || sp.CPU <= 0 || sp.StartCPU <= 0 || sp.PeakRSS <= 0 || sp.FilesOut <= 0 || sp.OutputB <= 0 || !sp.Committed {
		t.Fatalf("Spark unmeasured: %+v", sp)
	}
	// The harness fails a Spark run whose live rows differ before and
	// after. The data files' records after each engine differ by the
	// deleted rows of files one engine left alone (each plans its own
	// groups), so Spark's are at most icekeeper's, and no fewer than
	// the rows left after every delete (at least 90% of the input).
	if sp.RowsOut <= 0 || sp.RowsOut > ice.RowsOut || float64(sp.RowsOut) < 0.9*float64(ice.RowsOut) {
		t.Fatalf("the data files hold %d rows after Spark's rewrite, %d after icekeeper's", sp.RowsOut, ice.RowsOut)
	}
	// The bill: every AWS request the stages sent was counted.
	if b := ice.Bill; b.AWS == nil || b.AWS.Service("sqs") == 0 || b.AWS.Service("dynamodb") == 0 || b.AWS.WriteUnits <= 0 || b.AWS.SQSRequests <= 0 ||
		b.PlannerInvocations != 1 || b.RewriterInvocations <= 0 || b.CommitterInvocations <= 0 || b.LogBytes <= 0 {
		t.Fatalf("icekeeper's bill uncounted: %+v (aws %+v)", b, b.AWS)
	}
	// Lambda bills duration: the rewriters' time in their handler, the
	// planner's and committer's calls.
	if ice.Billed <= 0 || ice.CoordWall <= 0 || ice.Rounds < 1 {
		t.Fatalf("icekeeper's billed time unmeasured: handler %s, planner and committer %s, %d rounds", ice.Billed, ice.CoordWall, ice.Rounds)
	}
	if md := rep.Markdown(); !strings.Contains(md, "The whole bill, per TB compacted") || !strings.Contains(md, "in the handler at") {
		t.Fatalf("the report has no bill by duration:\n%s", md)
	}
	if !strings.Contains(rep.Markdown(), "Against Spark") {
		t.Fatalf("the report has no side-by-side with Spark:\n%s", rep.Markdown())
	}
}

// TestBench_TPCHTablesWrittenBySpark runs the benchmark on real data: TPC-H
// lineitem at a tiny scale factor from the pinned generator, written by
// Spark in five appends (one small file per month partition each) and
// deleted from by a commit of equality deletes from Iceberg Java's API
// (the driver's eqdelete op with a query), then compacted by every engine.
// It checks that Spark wrote the table, that it has equality deletes of
// about 5% of the rows, and that every engine kept its live rows. Skipped
// when the Java driver (make interop-setup) or the generator (make
// tpch-setup) is not installed.
func TestBench_TPCHTablesWrittenBySpark(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchmark binary, the TPC-H generator and two JVMs")
	}
	if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(sparkdriver.Dir), "target", "classpath.txt")); err != nil {
		t.Skipf("SKIPPED: the Spark driver is not built (make interop-setup): %v", err)
	}
	if _, err := os.Stat(bench.TPCHGenerator("..")); err != nil {
		t.Skipf("SKIPPED: the TPC-H generator is not installed (make tpch-setup): %v", err)
	}
	dir := t.TempDir()
	rep := runBench(t, "--data", "tpch", "--scale-factor", "0.01", "--tpch-tables", "lineitem", "--tpch-commits", "5",
		"--kinds", "equality", "--target-mb", "8", "--repeats", "1", "--memory=false", "--planner-files", "", "--commit-files", "0",
		"--busy-jobs", "0", "--cold-starts", "0", "--spark-cores", "1", "--dir", dir)
	if len(rep.Tables) != 1 || rep.Tables[0].TPCH == nil || rep.Tables[0].TPCH.Table != "lineitem" {
		t.Fatalf("tables %+v, want TPC-H lineitem with equality deletes", rep.Tables)
	}
	tr := rep.Tables[0]
	tp := tr.TPCH
	// Five appends of one file per month partition (lineitem ships over
	// 83 months): many small files, more than the partitions.
	if tp.Appends != 5 || tp.Partitions < 80 || tr.InputFiles <= tr.Partitions || tr.InputFiles > 5*tr.Partitions || tp.Spark == "" || !strings.HasPrefix(tp.Generator, "tpchgen-cli ") {
		t.Fatalf("the table was not written as five appends by Spark: %d data files, %+v", tr.InputFiles, tp)
	}
	// TPC-H lineitem has about 6,000,000 rows per unit of scale factor.
	if tp.Rows < 55_000 || tp.Rows > 65_000 || float64(tp.DeletedRows) < 0.04*float64(tp.Rows) || float64(tp.DeletedRows) > 0.06*float64(tp.Rows) {
		t.Fatalf("%d rows, %d of them deleted: want about 60,000 and 5%%", tp.Rows, tp.DeletedRows)
	}

	// The table as the bench left it (rolled back to what Spark wrote):
	// Spark's appends, then Iceberg Java's equality deletes.
	ctx := context.Background()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalogs.Open(ctx, catalogs.Config{Type: "sql", Name: "bench", URI: "file:" + filepath.Join(abs, "catalog.db"), Warehouse: "file://" + filepath.Join(abs, "warehouse")}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"bench", "equality_lineitem"})
	if err != nil {
		t.Fatal(err)
	}
	var appends int
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Operation == table.OpAppend && s.Summary.Properties["engine-name"] == "spark" {
			appends++
		}
	}
	if appends != 5 {
		t.Fatalf("%d appends by Spark in the table's snapshots, want 5", appends)
	}
	st, err := health.Measure(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if st.EqualityDeleteFiles == 0 || st.PositionDeleteFiles != 0 || st.DeletionVectors != 0 || st.DataFiles != tr.InputFiles {
		t.Fatalf("the table has %+v, want its %d data files and equality deletes only", st, tr.InputFiles)
	}

	// Every engine kept the live rows: iceberg-go and icekeeper rewrite
	// every file, so their data files hold exactly the live rows; Spark
	// (whose count before and after its rewrite the harness compares)
	// leaves a partition of fewer than five files alone.
	live := tp.Rows - tp.DeletedRows
	if tr.LiveRows != live {
		t.Fatalf("icekeeper kept %d rows, Spark reads %d live", tr.LiveRows, live)
	}
	for _, m := range tr.Measurements {
		switch m.Engine {
		case "raw arrow-go":
		case bench.EngineSpark:
			if !m.Committed || m.RowsOut < live || m.RowsOut > tp.Rows {
				t.Fatalf("Spark's rewrite: %+v, want committed with between %d and %d rows in the data files", m, live, tp.Rows)
			}
		default:
			if m.RowsOut != live {
				t.Fatalf("%s/%d kept %d rows, want %d", m.Engine, m.Procs, m.RowsOut, live)
			}
		}
	}
	if _, ok := tr.Find(bench.EngineSpark, 1); !ok {
		t.Fatalf("Spark was not measured: %+v", tr.Measurements)
	}
	if md := rep.Markdown(); !strings.Contains(md, "TPC-H `lineitem` at scale factor 0.01 from tpchgen-cli") {
		t.Fatalf("the report does not say which data it measured:\n%s", md)
	}
}

// runBench builds the benchmark binary and runs it with args (and --json)
// from the repository's root, failing the test with the end of its stderr
// when it fails.
func runBench(t *testing.T, args ...string) bench.Report {
	t.Helper()
	bin := t.TempDir() + "/icekeeper-bench"
	build := exec.Command("go", "build", "-o", bin, "./cmd/icekeeper-bench")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var stderr bytes.Buffer
	run := exec.Command(bin, append(args, "--json")...)
	run.Dir = ".."
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		// The harness says what failed on stderr, after its progress.
		t.Fatalf("bench: %v\n%s", err, bench.LastLines(stderr.String(), 40))
	}
	var rep bench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	return rep
}

// perUnitGrowth is how much a count per unit (table, group) grew from the
// smaller run to the larger: 1 when it stayed flat, above 1 when the count
// grows faster than the units.
func perUnitGrowth(small, large float64, smallUnits, largeUnits int) float64 {
	if small <= 0 {
		return 0
	}
	return (large / float64(largeUnits)) / (small / float64(smallUnits))
}

// maxPerUnitGrowth bounds perUnitGrowth between the smoke runs' two sizes
// (counts, never timings): a request per table or group that grew with the
// fleet or the job would be 4x and 5x here.
const maxPerUnitGrowth = 1.25

// TestBench_SweepVisitsEveryTableOnce runs the fleet sweep measurement on
// fleets of 50 and 200 tables and checks that one scheduled sweep visited
// every granted table exactly once, planned within its budget of 10 jobs,
// sent no more catalog, S3 or DynamoDB requests per table at 200 than at
// 50, and ended holding no more open files or goroutines; and that a
// sweep of 16 tables at once (the default) decided as one of one table
// at a time: the same outcomes, the same requests.
func TestBench_SweepVisitsEveryTableOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchmark binary")
	}
	rep := runBench(t, "--kinds", "", "--memory=false", "--planner-files", "", "--commit-files", "0", "--busy-jobs", "0", "--cold-starts", "0", "--spark-cores", "",
		"--sweep-tables", "50,200", "--sweep-concurrency", "1,16", "--storage", "s3", "--dir", t.TempDir())
	if len(rep.Sweeps) != 4 {
		t.Fatalf("%d sweeps measured, want 4", len(rep.Sweeps))
	}
	for i := 0; i < 4; i += 2 {
		one, many := rep.Sweeps[i], rep.Sweeps[i+1]
		if one.Concurrency != 1 || many.Concurrency != 16 || one.Tables != many.Tables {
			t.Fatalf("sweeps %d and %d: %d tables %d at once, %d tables %d at once; want one fleet at 1 and 16", i, i+1, one.Tables, one.Concurrency, many.Tables, many.Concurrency)
		}
		if !maps.Equal(one.Actions, many.Actions) || !maps.Equal(one.Catalog.Calls, many.Catalog.Calls) || one.TableS3.Class("get") != many.TableS3.Class("get") {
			t.Fatalf("%d tables: at 16 at once %v, %v, %d GETs; one at a time %v, %v, %d GETs: want the same", one.Tables,
				many.Actions, many.Catalog.Calls, many.TableS3.Class("get"), one.Actions, one.Catalog.Calls, one.TableS3.Class("get"))
		}
	}
	rep.Sweeps = []bench.SweepPoint{rep.Sweeps[1], rep.Sweeps[3]}
	for _, p := range rep.Sweeps {
		total := 0
		for _, n := range p.Actions {
			total += n
		}
		if p.Visited != p.Tables || p.Repeated != 0 || total != p.Tables || len(p.Errors) > 0 {
			t.Fatalf("sweep of %d tables: visited %d, %d more than once, %d outcomes, errors %v: want every table once", p.Tables, p.Visited, p.Repeated, total, p.Errors)
		}
		if p.Actions["planned"] != 10 || p.Actions["skipped:budget_max_jobs"] != p.Tables-10 {
			t.Fatalf("sweep of %d tables: outcome %v, want 10 planned (the budget) and the rest skipped for it", p.Tables, p.Actions)
		}
		if !p.OnS3 || p.TableS3.Class("get") < int64(p.Tables) {
			t.Fatalf("sweep of %d tables: %d GETs of the tables' metadata counted (on S3: %v), want the tables on the emulator's S3 and each read", p.Tables, p.TableS3.Class("get"), p.OnS3)
		}
		if c := p.Catalog; c.Call(catalogcalls.ListTables) != int64(p.Namespaces) || c.Call(catalogcalls.LoadTable) < int64(p.Tables) || c.GlueRequests < c.Call(catalogcalls.ListTables)+c.Call(catalogcalls.LoadTable) {
			t.Fatalf("sweep of %d tables in %d namespaces: %+v catalog calls, want a listing per namespace and a load per table, each at least a Glue request", p.Tables, p.Namespaces, p.Catalog)
		}
	}
	small, large := rep.Sweeps[0], rep.Sweeps[1]
	// What the planner process holds at the end must not grow with the
	// tables it loaded: a transport per table's S3 FileIO kept about
	// three open files per table (Lambda stops a function at 1,024;
	// third_party/iceberg-go/ICEKEEPER.md), 450 more at 200 tables than
	// at 50. What may differ is the clients' idle connections, an open
	// file and two goroutines each, up to the sweep's 16 at once to each
	// of the two endpoints: a run beside the other tests' load kept 8
	// more after 200 tables than after 50 (78 goroutines against 64), a
	// quiet one none. So the bound is a third of the tables added: below
	// any leak of a connection per table, above what the pools hold.
	slack := (large.Tables - small.Tables) / 3
	if large.OpenFiles > small.OpenFiles+slack || large.Goroutines > small.Goroutines+slack {
		t.Fatalf("the planner ended with %d open files and %d goroutines after %d tables, %d and %d after %d: want no growth with the tables",
			large.OpenFiles, large.Goroutines, large.Tables, small.OpenFiles, small.Goroutines, small.Tables)
	}
	for _, c := range []struct {
		what         string
		small, large float64
	}{
		{"LoadTable calls", float64(small.Catalog.Call(catalogcalls.LoadTable)), float64(large.Catalog.Call(catalogcalls.LoadTable))},
		{"tables' S3 GET requests", float64(small.TableS3.Class("get")), float64(large.TableS3.Class("get"))},
		{"icekeeper's S3 requests", float64(small.AWS.Service("s3")), float64(large.AWS.Service("s3"))},
		{"DynamoDB calls", float64(small.AWS.Service("dynamodb")), float64(large.AWS.Service("dynamodb"))},
	} {
		if g := perUnitGrowth(c.small, c.large, small.Tables, large.Tables); g == 0 || g > maxPerUnitGrowth {
			t.Fatalf("%s per table grew %.2fx from %d to %d tables (%.0f, %.0f): want at most %.2fx", c.what, g, small.Tables, large.Tables, c.small, c.large, maxPerUnitGrowth)
		}
	}
}

// TestBench_FanoutCommitsOnceWithEveryGroup runs the fan-out measurement
// on jobs of 10 and 50 groups and checks that each job committed once
// (one snapshot) with every group, kept every row, and that its DynamoDB
// and SQS requests per group did not grow with the groups.
func TestBench_FanoutCommitsOnceWithEveryGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchmark binary")
	}
	rep := runBench(t, "--kinds", "", "--memory=false", "--planner-files", "", "--commit-files", "0", "--busy-jobs", "0", "--cold-starts", "0", "--spark-cores", "",
		"--fanout-groups", "10,50", "--dir", t.TempDir())
	if len(rep.Fanouts) != 2 {
		t.Fatalf("%d fan-outs measured, want 2", len(rep.Fanouts))
	}
	for _, p := range rep.Fanouts {
		if !p.Committed || p.Snapshots != 1 || p.DoneGroups != p.Groups {
			t.Fatalf("job of %d groups: committed %v, %d snapshots added, %d groups done: want one commit with every group", p.Groups, p.Committed, p.Snapshots, p.DoneGroups)
		}
		if p.RowsAfter != p.RowsBefore || p.FilesAfter != p.Groups {
			t.Fatalf("job of %d groups: rows %d → %d, files %d → %d: want the rows kept in one file per group", p.Groups, p.RowsBefore, p.RowsAfter, p.FilesBefore, p.FilesAfter)
		}
	}
	small, large := rep.Fanouts[0], rep.Fanouts[1]
	for _, c := range []struct {
		what         string
		small, large float64
	}{
		{"DynamoDB calls", float64(small.AWS.Service("dynamodb")), float64(large.AWS.Service("dynamodb"))},
		{"DynamoDB write units", small.AWS.WriteUnits, large.AWS.WriteUnits},
		{"DynamoDB read units", small.AWS.ReadUnits, large.AWS.ReadUnits},
		{"SQS requests", float64(small.AWS.SQSRequests), float64(large.AWS.SQSRequests)},
		{"the committer's DynamoDB calls", float64(small.CommitAWS.Service("dynamodb")), float64(large.CommitAWS.Service("dynamodb"))},
	} {
		if g := perUnitGrowth(c.small, c.large, small.Groups, large.Groups); g == 0 || g > maxPerUnitGrowth {
			t.Fatalf("%s per group grew %.2fx from %d to %d groups (%.0f, %.0f): want at most %.2fx", c.what, g, small.Groups, large.Groups, c.small, c.large, maxPerUnitGrowth)
		}
	}
}
