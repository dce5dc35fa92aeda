// Package functions_test checks what each Lambda function's binary links:
// its own stage and nothing of the others. The planner cannot link the
// code that commits to a catalog or rewrites files; the rewriter links no
// catalog client at all (it opens the pinned metadata file); the committer
// links neither planning nor rewriting. Each function builds its stage
// through shared/wiring/<stage> and shared/handler/<function>, never
// through shared/stages (the whole pipeline, for the CLI and the tests).
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
		module + "shared/plan", module + "shared/trigger",
		module + "shared/handler/planner", module + "shared/wiring/planning",
	},
	"rewriter": {
		module + "shared/rewrite",
		module + "shared/handler/rewriter", module + "shared/wiring/rewriting",
	},
	"committer": {
		module + "shared/commit", module + "shared/joblog",
		module + "shared/handler/committer", module + "shared/wiring/committing",
	},
}

// catalogClients are the catalog clients (iceberg-go's catalogs and AWS
// Glue's API) and icekeeper's package that opens them.
var catalogClients = []string{
	"github.com/apache/iceberg-go/catalog",
	"github.com/apache/iceberg-go/catalog/glue",
	"github.com/apache/iceberg-go/catalog/rest",
	"github.com/apache/iceberg-go/catalog/sql",
	"github.com/apache/iceberg-go/catalog/hive",
	"github.com/aws/aws-sdk-go-v2/service/glue",
	module + "shared/catalogs",
}

// wholePipeline are the packages that build or run every stage at once.
var wholePipeline = []string{module + "shared/stages", module + "shared/localrun", module + "shared/bench"}

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
			if function == "rewriter" {
				for _, p := range catalogClients {
					if linked[p] {
						wrong = append(wrong, p+" (a catalog client)")
					}
				}
			}
			sort.Strings(wrong)
			if len(wrong) > 0 {
				t.Errorf("%s links %s", function, strings.Join(wrong, ", "))
			}
		})
	}
}
