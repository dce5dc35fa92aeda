// Package functions_test checks what each Lambda function's binary links:
// its own stage and nothing of the others. The planner cannot link the
// code that commits to a catalog or rewrites files; the rewriter links the
// catalog clients only to load a table for an orphan cleanup's tasks
// (shared/stage/rewriter.Catalog: the table as it is right before
// deleting), never the code that commits (shared/commit, the committer's
// stage); the committer links neither planning nor rewriting. Each function builds its stage
// through shared/stage/<function>, never
// through shared/harness/stages (the whole pipeline, for the CLI and the tests).
package functions_test

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/icekeeper/icekeeper/"

// stagePackages are the packages that belong to one stage only.
var stagePackages = map[string][]string{
	"planner": {
		module + "shared/plan", module + "shared/trigger", module + "shared/wakeup",
		module + "shared/stage/planner",
	},
	"rewriter": {
		module + "shared/rewrite",
		module + "shared/stage/rewriter",
	},
	// shared/joblog, the maintenance log, is not the committer's alone:
	// the committer writes it and the planner reads it for the weekly
	// summary (shared/summary), as the CLI does.
	"committer": {
		module + "shared/commit",
		module + "shared/stage/committer",
	},
}

// wholePipeline are the packages that build or run every stage at once.
var wholePipeline = []string{module + "shared/harness/stages", module + "shared/harness/localrun", module + "shared/harness/bench"}

// harness is the folder of the packages only the CLI's local mode, the
// demo, the bench and the tests use (shared/harness: the in-process
// emulator, sample tables and their churn, request counting, table
// fingerprints, the whole pipeline in one process). No function links any
// package under it.
const harness = module + "shared/harness/"

// plannerDecisions are the planner's decision packages (what to compact,
// how healthy a table is): the rewriter acts on a task and never decides.
var plannerDecisions = []string{
	module + "shared/health", module + "shared/binpack", module + "shared/filescan", module + "shared/pruning",
}

// TestFunctions_LinkNoHarness: nothing that runs only locally or in tests
// is in a Lambda binary.
func TestFunctions_LinkNoHarness(t *testing.T) {
	for function := range stagePackages {
		linked := deps(t, function)
		for p := range linked {
			if strings.HasPrefix(p, harness) {
				t.Errorf("%s links the harness package %s", function, p)
			}
		}
	}
}

// TestRewriter_LinksNoPlannerDecision: the rewriter's binary carries no
// health assessment or group planning.
func TestRewriter_LinksNoPlannerDecision(t *testing.T) {
	linked := deps(t, "rewriter")
	for _, p := range plannerDecisions {
		if linked[p] {
			t.Errorf("rewriter links %s", p)
		}
	}
}

func deps(t *testing.T, function string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "./"+function).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./%s: %v\n%s", function, err, out)
	}
	set := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		set[p] = true
	}
	return set
}

// TestFunctions_LinkOnlyTheirOwnStage.
func TestFunctions_LinkOnlyTheirOwnStage(t *testing.T) {
	for function, own := range stagePackages {
		t.Run(function, func(t *testing.T) {
			linked := deps(t, function)
			var wrong []string
			for _, p := range own {
				if !linked[p] {
					t.Errorf("%s does not link its own stage's %s", function, p)
				}
			}
			for other, pkgs := range stagePackages {
				if other == function {
					continue
				}
				for _, p := range pkgs {
					if linked[p] {
						wrong = append(wrong, p+" ("+other+")")
					}
				}
			}
			for _, p := range wholePipeline {
				if linked[p] {
					wrong = append(wrong, p+" (the whole pipeline)")
				}
			}
			sort.Strings(wrong)
			if len(wrong) > 0 {
				t.Errorf("%s links %s", function, strings.Join(wrong, ", "))
			}
		})
	}
}
