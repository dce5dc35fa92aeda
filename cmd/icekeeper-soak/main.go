// Command icekeeper-soak runs a fleet of busy tables over a simulated day
// with icekeeper maintaining them (see package soak), and writes the
// report: soak.json, soak.md and soak.png. `make soak` runs it. It exits
// 1 when an invariant was breached (a lost writer commit, rows that differ
// from the writer's model, a leaked byte, a stuck job, an alarm).
//
//	icekeeper-soak [--tables 100] [--namespaces 4] [--seed 1] [--scale 48] [--duration 24h] [--table-property KEY=VALUE ...] [--out DIR] [--dir DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/harness/soak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// The functions run here against the emulator over plain HTTP, and on
	// Lambda without a CA bundle: with one, every table's S3 FileIO
	// parses it (bench.childEnviron says what it costs).
	_ = os.Unsetenv("AWS_CA_BUNDLE")
	fs := flag.NewFlagSet("icekeeper-soak", flag.ExitOnError)
	var o soak.Options
	fs.IntVar(&o.Tables, "tables", 100, "tables in the fleet")
	fs.IntVar(&o.Namespaces, "namespaces", 4, "namespaces the tables are spread over")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the fleet and its writers (a run replays with the same seed)")
	fs.Float64Var(&o.Scale, "scale", 48, "simulated seconds per wall second: every interval, cooldown and retention is divided by it")
	fs.DurationVar(&o.Duration, "duration", 24*time.Hour, "simulated time the writers write for")
	fs.DurationVar(&o.SampleEvery, "sample-every", 30*time.Minute, "simulated time between measurements")
	fs.IntVar(&o.Rewriters, "rewriters", 2, "concurrent rewriter invocations")
	wakeUps := fs.Bool("wakeups", true, "the planner schedules each table's next expiry (EventBridge Scheduler, fired by the soak), as the stack does")
	fs.DurationVar(&o.Settle, "settle", 2*time.Minute, "wall time the jobs in flight get to end once the writers stopped")
	fs.Func("table-property", "KEY=VALUE set on every maintained table besides the fleet's own (repeatable), e.g. icekeeper.compaction.min-input-files=2", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		if o.TableProperties == nil {
			o.TableProperties = map[string]string{}
		}
		o.TableProperties[strings.TrimSpace(k)] = val
		return nil
	})
	dir := fs.String("dir", "", "work folder for the catalog and warehouse (default: a temporary folder, removed)")
	out := fs.String("out", "bin/soak", "folder for soak.json, soak.md and soak.png")
	logs := fs.String("log", "", "file the functions' JSON logs are written to as well (default: none)")
	_ = fs.Parse(os.Args[1:])
	o.NoWakeUps = !*wakeUps
	if *logs != "" {
		f, err := os.Create(*logs)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		o.Logs = f
	}
	o.Dir = *dir
	if o.Dir == "" {
		tmp, err := os.MkdirTemp("", "icekeeper-soak-")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(tmp)
		o.Dir = tmp
	}
	o.Progress = os.Stderr
	res, err := soak.Run(ctx, o)
	if err != nil {
		fail(err)
	}
	if err := res.Write(*out); err != nil {
		fail(err)
	}
	fmt.Print(res.Markdown())
	fmt.Fprintf(os.Stderr, "report: %s/soak.md, soak.json, soak.png\n", *out)
	if len(res.Failures) > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "icekeeper-soak:", err)
	os.Exit(2)
}
