package tests

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/shared/harness/bench"
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
	run := exec.Command(bin, "--size-mb", "4", "--file-kb", "64", "--target-mb", "2", "--partitions", "2", "--cold-starts", "1", "--repeats", "2", "--compression-level", "1", "--json", "--dir", t.TempDir())
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		// The harness says what failed on stderr, after its progress.
		t.Fatalf("bench: %v\n%s", err, lastLines(stderr.String(), 40))
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

// lastLines is the end of a long output: its last n lines.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
