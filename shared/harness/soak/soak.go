// Package soak runs a fleet of busy tables over simulated time with
// icekeeper maintaining them in active mode, and measures what happened
// (issue 34: `make soak`, and a short version in `make test`).
//
// Many tables (several namespaces, v2 and v3, partitioned and not) each
// get a workload: streaming appends, CDC upserts with equality deletes,
// Spark-style MERGE deletes (position deletes on v2, deletion vectors on
// v3), periodic overwrites, or none (idle); some are heavily queried
// (query signals reach the planner), the rest never. Every writer is a
// churn.Writer, so it mirrors each change to a twin table nothing
// maintains. icekeeper runs as it would on Lambda, driven only by its
// real triggers: the hourly sweep (the stack's schedule), a commit event
// after every writer's commit, and the continuation events the committer
// puts on the bus; the planner, rewriter and committer handlers run
// in-process, the queues delivered by pollers standing in for the event
// source mappings (package localrun).
//
// Time is scaled by one factor: every interval (the writers', the sweep's,
// the cooldowns, the snapshot retention) is its simulated value divided by
// Options.Scale, so that a simulated day fits in well under an hour.
//
// Invariants checked (Result.Failures lists every breach): no writer's
// commit fails (a commit icekeeper's commits kept conflicting with); every
// table's rows equal its twin's at the end; no byte leaked (no file left
// on storage that a committed snapshot once referenced or that an
// icekeeper job wrote, unless a snapshot the table keeps references it);
// no job is left outside a final state; no alarm of the stack, with its
// default thresholds, would have fired.
package soak

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Options shape a run.
type Options struct {
	// Dir holds the catalog and the warehouse (and nothing else).
	Dir string
	// Seed makes the fleet and the writers' changes replayable.
	Seed uint64
	// Tables is the fleet's size; Namespaces how many namespaces share it.
	Tables, Namespaces int
	// Scale is simulated seconds per wall second (48: a day in 30 min).
	Scale float64
	// Duration is the simulated time the writers write for.
	Duration time.Duration
	// SampleEvery is the simulated time between measurements (0: 30 min).
	SampleEvery time.Duration
	// Rewriters and Committers are the concurrent invocations the pollers
	// make (0: 2 and 1); Planners the planner's concurrent invocations
	// (0: 2).
	Rewriters, Committers, Planners int
	// NoWakeUps turns the planner's expiry wake-ups off (package
	// wakeup; on in the stack by default): a table's expiry then waits
	// for its next event or sweep.
	NoWakeUps bool
	// Settle bounds the wall time the pipeline gets, once the writers
	// stopped, to finish the jobs in flight (0: 2 min).
	Settle time.Duration
	// Progress hears what the run does (nil: nothing).
	Progress io.Writer
	// Logs, when set, also hears the functions' JSON logs (every
	// dispatch, skip and job), to follow one table through the run.
	Logs io.Writer
	// TableProperties are set on every maintained table besides the
	// fleet's own (an owner's tuning to measure, such as
	// icekeeper.compaction.min-input-files); they win over the fleet's.
	TableProperties map[string]string
}

// The workloads' simulated schedules. A streaming writer's micro-batch
// every few minutes rather than seconds: at 100 tables and a day in half
// an hour, a commit every few seconds of simulated time would be hundreds
// of commits a wall second, more than the 2 cores this runs on write.
const (
	SweepEvery       = time.Hour // the stack's sweep schedule (infra/cost.go: 730 sweeps a month)
	StreamEvery      = 10 * time.Minute
	CDCEvery         = 15 * time.Minute
	MergeEvery       = time.Hour
	OverwriteEvery   = 2 * time.Hour
	QueryEvery       = 10 * time.Minute
	Retention        = 2 * time.Hour // history.expire.max-snapshot-age-ms
	CompactionPeriod = time.Hour     // ICEKEEPER_MIN_INTERVAL (the default; no table sets its own)
	ExpirePeriod     = time.Hour     // icekeeper.expire.min-interval
	ManifestsPeriod  = 6 * time.Hour // icekeeper.rewrite-manifests.min-interval
	DeletesPeriod    = time.Hour     // icekeeper.rewrite-deletes.min-interval
	// TargetFileSize is the tables' write.target-file-size-bytes: small,
	// so that the fleet's small tables (a writer's file of 1,000 rows is
	// about 12 KB) have an optimum of several files a partition.
	TargetFileSize = 32 << 10
)

func (o *Options) defaults() {
	if o.Tables <= 0 {
		o.Tables = 100
	}
	if o.Namespaces <= 0 {
		o.Namespaces = 4
	}
	if o.Scale <= 0 {
		o.Scale = 48
	}
	if o.Duration <= 0 {
		o.Duration = 24 * time.Hour
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 30 * time.Minute
	}
	if o.Rewriters <= 0 {
		o.Rewriters = 2
	}
	if o.Committers <= 0 {
		o.Committers = 1
	}
	if o.Planners <= 0 {
		o.Planners = 2
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// wall converts a simulated duration to wall time.
func (o Options) wall(sim time.Duration) time.Duration {
	return time.Duration(float64(sim) / o.Scale)
}

// clock is the run's simulated time.
type clock struct {
	start time.Time
	scale float64
}

// now is the simulated time since the start.
func (c clock) now() time.Duration {
	return time.Duration(float64(time.Since(c.start)) * c.scale)
}

func (o Options) progress(c clock, format string, args ...any) {
	fmt.Fprintf(o.Progress, "%s sim %s: %s\n", time.Now().UTC().Format("15:04:05"), c.now().Truncate(time.Minute), fmt.Sprintf(format, args...))
}

// Run runs the fleet and returns what it measured. An error is a run that
// could not be carried out; a run that breached an invariant returns its
// Result with Failures.
func Run(ctx context.Context, o Options) (Result, error) {
	o.defaults()
	f, err := newFleet(ctx, o)
	if err != nil {
		return Result{}, err
	}
	defer f.close()
	return f.run(ctx)
}
