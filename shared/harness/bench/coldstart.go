package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/bootstraps"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
)

// ColdStart is one function binary's start: its size, and the time from
// exec to its first Runtime API request (GET
// /2018-06-01/runtime/invocation/next), when Lambda would hand it its first
// event, over several runs.
type ColdStart struct {
	Function string `json:"function"`
	// Revision is the baseline's git revision; "" for the tree measured.
	Revision    string          `json:"revision,omitempty"`
	BinaryBytes int64           `json:"binary_bytes"`
	Runs        []time.Duration `json:"runs_ns"`
}

// Median is the middle run.
func (c ColdStart) Median() time.Duration {
	s := slices.Clone(c.Runs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// ColdStartOptions set up RunColdStarts.
type ColdStartOptions struct {
	// Repo is the module's root (the functions are built from it).
	Repo string
	// Dir holds the binaries and the catalog.
	Dir string
	// Runs per function.
	Runs int
	// Baseline, when set, is a git revision of Repo whose functions are
	// built too (from a temporary worktree) and started interleaved with
	// the tree's, each run of a function right after the other's.
	Baseline string
	Progress func(format string, args ...any)
}

// RunColdStarts builds each function as `make lambdas` does (static,
// stripped, lambda.norpc), for this machine's architecture, and starts each
// Runs times in mode active against a stand-in Runtime API on loopback,
// with the configuration a deployed function has (resources provisioned in
// the emulator, the stack's default Glue catalog), the runs interleaved.
func RunColdStarts(ctx context.Context, o ColdStartOptions) ([]ColdStart, error) {
	if o.Runs <= 0 {
		o.Runs = 7
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	type binary struct{ function, revision, path string }
	var binaries []binary
	build := func(repo, revision, bin string) error {
		paths, err := bootstraps.Build(ctx, repo, bin)
		if err != nil {
			return err
		}
		for _, fn := range bootstraps.Functions {
			binaries = append(binaries, binary{fn, revision, paths[fn]})
		}
		return nil
	}
	if err := build(o.Repo, "", filepath.Join(o.Dir, "lambda")); err != nil {
		return nil, err
	}
	if o.Baseline != "" {
		tree := filepath.Join(o.Dir, "baseline-src")
		if out, err := exec.CommandContext(ctx, "git", "-C", o.Repo, "worktree", "add", "--detach", tree, o.Baseline).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("check out the baseline %s: %v\n%s", o.Baseline, err, out)
		}
		defer exec.Command("git", "-C", o.Repo, "worktree", "remove", "--force", tree).Run()
		if err := build(tree, o.Baseline, filepath.Join(o.Dir, "lambda-baseline")); err != nil {
			return nil, err
		}
		// Each function's baseline runs right after it.
		n := len(binaries) / 2
		paired := make([]binary, 0, len(binaries))
		for k := range n {
			paired = append(paired, binaries[k], binaries[n+k])
		}
		binaries = paired
	}
	cloud := localcloud.Start()
	defer cloud.Close()
	res, err := cloud.Provision(ctx, "coldstart", "", 3)
	if err != nil {
		return nil, err
	}
	cfg := config.Defaults()
	res.Apply(&cfg)
	cfg.Mode, cfg.Grants, cfg.Prefix = config.ModeActive, "bench", "icekeeper"
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	// The stack's default catalog, Glue (here the emulator's): what a
	// deployed function opens at init. (A sql catalog would open and set
	// up a sqlite file, which no deployment does.)
	cfg.Catalog = catalogs.Config{Type: "glue", Name: "bench", Warehouse: "file://" + filepath.Join(abs, "coldstart")}
	env := append(os.Environ(), "AWS_ENDPOINT_URL="+cloud.URL, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1769")
	for k, v := range cfg.Env() {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}

	api, err := startRuntimeAPI()
	if err != nil {
		return nil, err
	}
	defer api.close()
	// The runs are interleaved (planner, rewriter, committer, planner, ...)
	// so that a drift in the machine's speed reaches every function alike.
	out := make([]ColdStart, len(binaries))
	for k, b := range binaries {
		st, err := os.Stat(b.path)
		if err != nil {
			return nil, err
		}
		out[k] = ColdStart{Function: b.function, Revision: b.revision, BinaryBytes: st.Size()}
	}
	for i := 0; i < o.Runs; i++ {
		for k, b := range binaries {
			d, err := api.firstRequest(ctx, b.path, append(env, "AWS_LAMBDA_FUNCTION_NAME=icekeeper-"+b.function))
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", b.function, b.revision, err)
			}
			out[k].Runs = append(out[k].Runs, d)
		}
	}
	for _, cs := range out {
		o.Progress("cold start %s %s: median %s over %d runs, binary %.1f MB", cs.Function, cs.Revision, cs.Median().Round(time.Millisecond/10), o.Runs, float64(cs.BinaryBytes)/1e6)
	}
	return out, nil
}

// runtimeAPI stands in for Lambda's Runtime API: it notes when the first
// "next invocation" request arrives and holds it open (no event comes).
type runtimeAPI struct {
	addr string
	srv  *http.Server
	next chan time.Time
}

func startRuntimeAPI() (*runtimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &runtimeAPI{addr: ln.Addr().String(), next: make(chan time.Time, 1)}
	a.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/runtime/invocation/next") {
			select {
			case a.next <- time.Now():
			default:
			}
			<-r.Context().Done()
			return
		}
		// An init error report, or anything else: the start failed.
		w.WriteHeader(http.StatusAccepted)
	})}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

func (a *runtimeAPI) close() { _ = a.srv.Close() }

// firstRequest starts the binary and returns the time to its first
// request for an event, then stops it.
func (a *runtimeAPI) firstRequest(ctx context.Context, path string, env []string) (time.Duration, error) {
	for len(a.next) > 0 {
		<-a.next
	}
	var logs strings.Builder
	cmd := exec.Command(path)
	cmd.Env = append(env, "AWS_LAMBDA_RUNTIME_API="+a.addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	select {
	case at := <-a.next:
		return at.Sub(start), nil
	case err := <-exited:
		exited <- err
		return 0, fmt.Errorf("exited before asking for an event (%v): %s", err, logs.String())
	case <-time.After(30 * time.Second):
		return 0, errors.New("no request for an event within 30 s: " + logs.String())
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
