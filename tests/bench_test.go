package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/shared/harness/bench"
	"github.com/icekeeper/icekeeper/shared/harness/sparkdriver"
)

// TestBench_SmokeRunMeasuresEveryEngine runs the benchmark harness on a
// tiny input and checks that it measured every engine on every table and
// that every engine kept the same rows. Timings are never asserted.
func TestBench_SmokeRunMeasuresEveryEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchmark binary")
	}
	bin := t.TempDir() + "/icekeeper-bench"
	build := exec.Command("go", "build", "-o", bin, "./cmd/icekeeper-bench")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var stderr bytes.Buffer
	run := exec.Command(bin, "--size-mb", "4", "--file-kb", "64", "--target-mb", "2", "--partitions", "2", "--cold-starts", "1", "--repeats", "2", "--compression-level", "1", "--spark-cores", "", "--json", "--dir", t.TempDir())
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
	bin := t.TempDir() + "/icekeeper-bench"
	build := exec.Command("go", "build", "-o", bin, "./cmd/icekeeper-bench")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var stderr bytes.Buffer
	run := exec.Command(bin, "--kinds", "position", "--size-mb", "4", "--file-kb", "64", "--target-mb", "2", "--partitions", "2",
		"--repeats", "1", "--memory=false", "--planner-files", "", "--commit-files", "0", "--busy-jobs", "0", "--cold-starts", "0",
		"--spark-cores", "1", "--json", "--dir", t.TempDir())
	run.Dir = ".."
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, bench.LastLines(stderr.String(), 40))
	}
	var rep bench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
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
	if !strings.Contains(rep.Markdown(), "The whole bill, per TB compacted") {
		t.Fatalf("the report has no bill:\n%s", rep.Markdown())
	}
	if !strings.Contains(rep.Markdown(), "Against Spark") {
		t.Fatalf("the report has no side-by-side with Spark:\n%s", rep.Markdown())
	}
}
