// Package bootstraps builds the three Lambda functions' bootstraps the way
// `make lambdas` does (static, stripped, the lambda.norpc tag, Linux), for
// this machine's architecture, so that the benchmark's cold starts and the
// tests under AWS's Runtime Interface Emulator run the binaries a
// deployment ships. Invariant: the flags here are the Makefile's.
package bootstraps

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Functions are the functions a deployment ships, in pipeline order.
var Functions = []string{"planner", "rewriter", "committer"}

// Build builds each function of the module at repo into
// dir/<function>/bootstrap and returns those paths by function.
func Build(ctx context.Context, repo, dir string) (map[string]string, error) {
	out := map[string]string{}
	for _, fn := range Functions {
		path := filepath.Join(dir, fn, "bootstrap")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-tags", "lambda.norpc", "-o", path, "./functions/"+fn)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("bootstraps: build %s at %s: %v\n%s", fn, repo, err, msg)
		}
		out[fn] = path
	}
	return out, nil
}
