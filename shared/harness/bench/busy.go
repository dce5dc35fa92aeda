package bench

// The busy-table scenario (issue: stay out of the writers' way): a writer
// commits appends and merge-on-read deletes to the table's partitions on a
// schedule while jobs plan, rewrite and commit one after another, once
// with the committer rebasing concurrent deletes and once aborting on them
// (ICEKEEPER_REBASE_DELETES=false), same seed, side by side. The writer
// mirrors every change to a twin table nothing maintains; each run ends
// with the table's fingerprint compared with the twin's.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/churn"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// BusyRun is one run of the busy-table scenario.
type BusyRun struct {
	Version int  `json:"format_version"`
	Rebase  bool `json:"rebase"`
	Jobs    int  `json:"jobs"`
	// Committed, Aborted and Failed count the jobs by outcome.
	Committed int `json:"committed"`
	Aborted   int `json:"aborted"`
	Failed    int `json:"failed"`
	// DeletesRebased is the concurrent delete files the commits rebased.
	DeletesRebased int `json:"deletes_rebased"`
	// WriterCommits and WriterConflicts are the writer's.
	WriterCommits   int `json:"writer_commits"`
	WriterConflicts int `json:"writer_conflicts"`
	// JobMedian is the median job's wall time, plan to commit.
	JobMedian time.Duration `json:"job_median"`
	// RowsMatch: the table holds the twin's rows at the end.
	RowsMatch bool   `json:"rows_match"`
	Rows      int64  `json:"rows"`
	Reasons   string `json:"abort_reasons,omitempty"`
}

// BusyOptions shape the scenario.
type BusyOptions struct {
	Dir      string
	Jobs     int
	Interval time.Duration
	Progress io.Writer
}

// RunBusy runs the scenario on v2 (position deletes) and v3 (deletion
// vectors), each without and with the rebase.
func RunBusy(ctx context.Context, o BusyOptions) ([]BusyRun, error) {
	if o.Jobs <= 0 {
		o.Jobs = 20
	}
	if o.Interval <= 0 {
		o.Interval = 250 * time.Millisecond
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	var runs []BusyRun
	for _, version := range []int{2, 3} {
		for _, rebase := range []bool{false, true} {
			r, err := runBusy(ctx, o, version, rebase)
			if err != nil {
				return runs, fmt.Errorf("busy v%d rebase=%t: %w", version, rebase, err)
			}
			fmt.Fprintf(o.Progress, "%s busy v%d rebase=%t: %d of %d jobs committed, rows match %t\n", time.Now().Format("15:04:05"), version, rebase, r.Committed, r.Jobs, r.RowsMatch)
			runs = append(runs, r)
		}
	}
	return runs, nil
}

func runBusy(ctx context.Context, o BusyOptions, version int, rebase bool) (BusyRun, error) {
	run := BusyRun{Version: version, Rebase: rebase, Jobs: o.Jobs}
	name := fmt.Sprintf("busy_v%d_%t", version, rebase)
	cat, cc, err := openCatalog(ctx, o.Dir)
	if err != nil {
		return run, err
	}
	cloud, err := localcloud.Listen("127.0.0.1:0")
	if err != nil {
		return run, err
	}
	defer cloud.Close()
	cfg := config.Defaults()
	cfg.Catalog = cc
	cfg.Mode, cfg.Grants = config.ModeActive, "bench"
	cfg.MinInterval = time.Millisecond
	cfg.RebaseDeletes = rebase
	res, err := cloud.Provision(ctx, name, "", cfg.MaxTaskAttempts)
	if err != nil {
		return run, err
	}
	res.Apply(&cfg)
	deps, err := stages.NewDeps(cfg, cloud.Clients, slog.New(slog.NewJSONHandler(io.Discard, nil)), stages.AllNeeds...)
	if err != nil {
		return run, err
	}
	var lines strings.Builder
	deps.Metrics = metrics.NewEmitter(&lines, "", nil)
	st, _, err := deps.LocalStages(cat)
	if err != nil {
		return run, err
	}

	// A CDC-like table: 4 partitions of small files with position deletes
	// (or DVs) and equality deletes, and a twin.
	opts := sampletable.Options{FormatVersion: version, Partitions: 4, Files: 20, RowsPerFile: 500, PositionDeletes: true, EqualityDeletes: true}
	ident, twin := table.Identifier{"bench", name}, table.Identifier{"bench", name + "_twin"}
	if _, err := sampletable.Create(ctx, cat, ident, opts); err != nil {
		return run, err
	}
	if _, err := sampletable.Create(ctx, cat, twin, opts); err != nil {
		return run, err
	}
	w := churn.Start(ctx, cat, ident, twin, churn.Options{
		Interval: o.Interval, Partitions: opts.Partitions, AppendPerPartition: 10, Deletes: 8,
		SampleRows: int64(opts.Partitions * opts.Files * opts.RowsPerFile), FirstID: 10_000_000, Seed: uint64(version),
	})
	var took []time.Duration
	var reasons []string
	for len(took) < o.Jobs {
		start := time.Now()
		c, err := localrun.RunCycle(ctx, st, "bench."+name, "bench")
		if err != nil {
			_, _ = w.Stop()
			return run, err
		}
		if c.Plan.Outcome != plan.OutcomePlanned {
			time.Sleep(o.Interval) // the writer has not added enough yet
			continue
		}
		took = append(took, time.Since(start))
		switch {
		case c.Committed:
			run.Committed++
		case c.Job != nil && c.Job.State == jobs.Aborted:
			run.Aborted++
			reasons = append(reasons, FirstWords(c.Job.Reason))
		default:
			run.Failed++
			if c.Job != nil {
				reasons = append(reasons, FirstWords(c.Job.Reason))
			}
		}
		// Each job runs whatever the last one did: a job aborted by a
		// concurrent commit does not make the next wait.
		if err := deps.Leases.RecordSuccess(ctx, "bench."+name); err != nil {
			_, _ = w.Stop()
			return run, err
		}
	}
	ws, err := w.Stop()
	if err != nil {
		return run, err
	}
	run.WriterCommits, run.WriterConflicts = ws.Commits, ws.Conflicts
	slices.Sort(took)
	run.JobMedian = took[len(took)/2]
	run.DeletesRebased = countMetric(lines.String(), "DeletesRebased")
	got, err := fingerprintOf(ctx, cat, ident)
	if err != nil {
		return run, err
	}
	want, err := fingerprintOf(ctx, cat, twin)
	if err != nil {
		return run, err
	}
	run.RowsMatch, run.Rows = got == want, got.Rows
	slices.Sort(reasons)
	run.Reasons = strings.Join(slices.Compact(reasons), "; ")
	return run, nil
}

func fingerprintOf(ctx context.Context, cat interface {
	LoadTable(context.Context, table.Identifier) (*table.Table, error)
}, ident table.Identifier) (fingerprint.Fingerprint, error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return fingerprint.Fingerprint{}, err
	}
	return fingerprint.Table(ctx, tbl)
}

// FirstWords shortens an abort reason to what happened, without paths or
// snapshot ids, so that equal reasons group.
func FirstWords(reason string) string {
	if i := strings.LastIndex(reason, "concurrent change: "); i >= 0 {
		reason = reason[i+len("concurrent change: "):]
	}
	reason = snapshotID.ReplaceAllString(reason, "a snapshot")
	for _, cut := range []string{" file:", " s3:", " (", ": requirement failed"} {
		if i := strings.Index(reason, cut); i > 0 {
			reason = reason[:i]
		}
	}
	return reason
}

var snapshotID = regexp.MustCompile(`snapshot \d+`)

// countMetric sums a metric over EMF lines.
func countMetric(emf, name string) int {
	var n float64
	for _, line := range strings.Split(emf, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if v, ok := m[name].(float64); ok {
			n += v
		}
	}
	return int(n)
}
