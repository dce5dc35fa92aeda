package soak

// The run: writers, triggers and functions over simulated time, samples
// along the way, then the settling and the final checks.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/icekeeper/icekeeper/shared/harness/bench"
	"github.com/icekeeper/icekeeper/shared/harness/churn"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/outputs"
)

// Counts are what the writers and icekeeper did since the start.
type Counts struct {
	WriterCommits int `json:"writer_commits"`
	// WriterRetries are the writers' commit attempts that met a newer
	// snapshot (every table has one writer: icekeeper's commits).
	WriterRetries int `json:"writer_retries"`
	// Jobs, by outcome, and the concurrent deletes their commits rebased.
	JobsPlanned    int `json:"jobs_planned"`
	JobsCommitted  int `json:"jobs_committed"`
	JobsAborted    int `json:"jobs_aborted"`
	JobsFailed     int `json:"jobs_failed"`
	DeletesRebased int `json:"deletes_rebased"`
}

// Sample is the fleet at one moment.
type Sample struct {
	// At is the simulated time since the start.
	At time.Duration `json:"at"`
	// FileRatio* are data files over the optimum across the tables: the
	// worst, the 90th percentile and the median.
	FileRatioMax    float64 `json:"file_ratio_max"`
	FileRatioP90    float64 `json:"file_ratio_p90"`
	FileRatioMedian float64 `json:"file_ratio_median"`
	// StorageRatio*: stored bytes over retained bytes, the same way.
	StorageRatioMax    float64 `json:"storage_ratio_max"`
	StorageRatioMedian float64 `json:"storage_ratio_median"`
	// ScheduledStorageRatioMax: stored bytes over what retention keeps
	// until the next expiry the tables' interval allows, the worst table.
	ScheduledStorageRatioMax float64 `json:"scheduled_storage_ratio_max"`
	DataFiles                int     `json:"data_files"`
	DeleteFiles              int     `json:"delete_files"`
	StoredBytes              int64   `json:"stored_bytes"`
	RetainedBytes            int64   `json:"retained_bytes"`
	ScheduledBytes           int64   `json:"scheduled_bytes"`
	LiveBytes                int64   `json:"live_bytes"`
	Counts
	// Tables are the per-table samples, by table name.
	Tables map[string]TableSample `json:"tables,omitempty"`
}

func (f *fleet) run(ctx context.Context) (Result, error) {
	runCtx, stopFunctions := context.WithCancel(ctx)
	defer stopFunctions()
	var fnWG sync.WaitGroup
	for range f.o.Planners {
		fnWG.Go(func() { f.plannerLoop(runCtx) })
	}
	for range f.o.Rewriters {
		fnWG.Go(func() { f.poll(runCtx, fnRewriter, f.st.Tasks, f.st.Rewriter) })
	}
	for range f.o.Committers {
		fnWG.Go(func() { f.poll(runCtx, fnCommitter, f.st.Commits, f.st.Committer) })
	}
	f.clk = clock{start: time.Now(), scale: f.o.Scale}
	f.o.progress(f.clk, "%d tables, a day in %s", len(f.tables), f.o.wall(24*time.Hour).Round(time.Second))

	// The writers.
	for i, t := range f.tables {
		wo, ok := f.writerOptions(i, t)
		if !ok {
			continue
		}
		name := t.Name
		wo.AfterCommit = func(context.Context) { f.send(commitEvent(name)) }
		t.writer = churn.Start(ctx, f.cat, t.ident, t.twin, wo)
	}
	// The triggers: the sweep schedule, query signals.
	trigCtx, stopTriggers := context.WithCancel(ctx)
	var trigWG sync.WaitGroup
	trigWG.Go(func() {
		tick := time.NewTicker(f.o.wall(SweepEvery))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-trigCtx.Done():
				return
			case now := <-tick.C:
				f.send(fmt.Appendf(nil, scheduledEvent, n, now.UTC().Format(time.RFC3339)))
			}
		}
	})
	if f.wakeups != nil {
		trigWG.Go(func() { f.wakeups.run(trigCtx) })
	}
	trigWG.Go(func() {
		tick := time.NewTicker(f.o.wall(QueryEvery))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-trigCtx.Done():
				return
			case <-tick.C:
				for _, t := range f.tables {
					if t.Queried {
						f.send(queryEvent(t.Name, n))
					}
				}
			}
		}
	})

	// Samples until the simulated duration is over.
	var res Result
	end := f.clk.start.Add(f.o.wall(f.o.Duration))
	tick := time.NewTicker(f.o.wall(f.o.SampleEvery))
	for done := false; !done; {
		select {
		case <-ctx.Done():
			stopTriggers()
			return res, ctx.Err()
		case <-tick.C:
		case <-time.After(time.Until(end)):
			done = true
		}
		if err := f.sample(ctx); err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("sample: %v", err))
		}
		s := f.samples[len(f.samples)-1]
		f.o.progress(f.clk, "files %.2fx optimum (worst %.2fx), storage %.2fx retained (worst %.2fx); writers %d commits, %d retries; jobs %d committed, %d aborted, %d failed",
			s.FileRatioMedian, s.FileRatioMax, s.StorageRatioMedian, s.StorageRatioMax, s.WriterCommits, s.WriterRetries, s.JobsCommitted, s.JobsAborted, s.JobsFailed)
	}
	tick.Stop()
	res.Simulated = f.clk.now()

	// The writers stop; a failed commit is a lost one.
	f.triggersStopped = time.Now()
	stopTriggers()
	trigWG.Wait()
	for _, t := range f.tables {
		if t.writer == nil {
			continue
		}
		if _, err := t.writer.Stop(); err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("%s: the writer's commit failed: %v", t.Name, err))
		}
	}
	// The pipeline settles: the events handled, the jobs in flight ended.
	f.o.progress(f.clk, "writers stopped; settling")
	if stuck := f.settle(ctx); len(stuck) > 0 {
		for _, s := range stuck {
			res.Failures = append(res.Failures, "stuck job: "+s)
		}
	}
	stopFunctions()
	fnWG.Wait()
	res.Wall = time.Since(f.clk.start)
	// A job planned after the pipeline settled was cut off by the stop:
	// its files are not a leak of icekeeper's but of this harness's.
	for _, s := range f.openJobs(ctx) {
		res.Failures = append(res.Failures, "job cut off when the functions stopped: "+s)
	}

	if err := f.sample(ctx); err != nil {
		res.Failures = append(res.Failures, fmt.Sprintf("final sample: %v", err))
	}
	res.Failures = append(res.Failures, f.checkRows(ctx)...)
	leaks, writerOrphans, err := f.checkLeaks(ctx)
	if err != nil {
		res.Failures = append(res.Failures, fmt.Sprintf("leak check: %v", err))
	}
	res.LeakedFiles, res.WriterOrphanFiles = leaks, writerOrphans
	for _, l := range leaks {
		res.Failures = append(res.Failures, "leaked: "+l)
	}
	res.JobEnds = f.jobEnds(ctx)
	f.finish(ctx, &res)
	return res, nil
}

// jobEnds counts the jobs that did not commit by state and reason.
func (f *fleet) jobEnds(ctx context.Context) map[string]int {
	f.jobsMu.Lock()
	ids := make([]string, 0, len(f.jobIDs))
	for id := range f.jobIDs {
		ids = append(ids, id)
	}
	f.jobsMu.Unlock()
	out := map[string]int{}
	for _, id := range ids {
		j, err := f.deps.Jobs.Get(ctx, id)
		if err != nil {
			out["unreadable: "+err.Error()]++
			continue
		}
		if j.State != jobs.Committed {
			out[fmt.Sprintf("%s %s: %s", j.Kind, j.State, bench.FirstWords(j.Reason))]++
		}
	}
	return out
}

// sample measures every table and appends the fleet's sample.
func (f *fleet) sample(ctx context.Context) error {
	s := Sample{At: f.clk.now(), Tables: map[string]TableSample{}}
	var fileRatios, storageRatios, scheduledRatios []float64
	var errs []error
	for _, t := range f.tables {
		ts, _, err := f.measure(ctx, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.Tables[t.Name] = ts
		fileRatios = append(fileRatios, ts.FileRatio())
		storageRatios = append(storageRatios, ts.StorageRatio())
		scheduledRatios = append(scheduledRatios, ts.ScheduledStorageRatio())
		s.DataFiles += ts.DataFiles
		s.DeleteFiles += ts.DeleteFiles
		s.StoredBytes += ts.StoredBytes
		s.RetainedBytes += ts.RetainedBytes
		s.ScheduledBytes += ts.ScheduledBytes
		s.LiveBytes += ts.LiveBytes
		if t.writer != nil {
			ws := t.writer.Stats()
			s.WriterCommits += ws.Commits
			s.WriterRetries += ws.Conflicts
		}
	}
	s.FileRatioMax, s.FileRatioP90, s.FileRatioMedian = quantile(fileRatios, 1), quantile(fileRatios, 0.9), quantile(fileRatios, 0.5)
	s.StorageRatioMax, s.StorageRatioMedian = quantile(storageRatios, 1), quantile(storageRatios, 0.5)
	s.ScheduledStorageRatioMax = quantile(scheduledRatios, 1)
	s.JobsPlanned = int(f.emf.total("JobsPlanned"))
	s.JobsCommitted = int(f.emf.total("JobsCommitted"))
	s.JobsAborted = int(f.emf.total("JobsAborted"))
	s.JobsFailed = int(f.emf.total("JobsFailed"))
	s.DeletesRebased = int(f.emf.total("DeletesRebased"))
	f.samples = append(f.samples, s)
	return errors.Join(errs...)
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

// settle waits, up to Options.Settle, until every event is handled and
// every job is in a final state, and stays so for settleQuiet (a
// committer that just committed may still be announcing the next job);
// it returns the jobs that are not.
func (f *fleet) settle(ctx context.Context) []string {
	deadline := time.Now().Add(f.o.Settle)
	var quietSince time.Time
	for {
		open := f.openJobs(ctx)
		if f.pending.Load() > 0 {
			open = append(open, fmt.Sprintf("%d planner events still queued", f.pending.Load()))
		}
		switch {
		case len(open) > 0:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		case time.Since(quietSince) >= settleQuiet:
			return nil
		}
		if time.Now().After(deadline) {
			return open
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// settleQuiet is how long the pipeline must stay idle to be settled.
const settleQuiet = 5 * time.Second

// openJobs lists the jobs not in a final state.
func (f *fleet) openJobs(ctx context.Context) []string {
	f.jobsMu.Lock()
	ids := make([]string, 0, len(f.jobIDs))
	for id := range f.jobIDs {
		ids = append(ids, id)
	}
	f.jobsMu.Unlock()
	sort.Strings(ids)
	var open []string
	for _, id := range ids {
		j, err := f.deps.Jobs.Get(ctx, id)
		if err != nil {
			open = append(open, fmt.Sprintf("%s: %v", id, err))
			continue
		}
		switch j.State {
		case jobs.Committed, jobs.Aborted, jobs.Failed:
		default:
			open = append(open, fmt.Sprintf("%s of %s is %s", id, j.Table, j.State))
		}
	}
	return open
}

// checkRows compares every table with its twin.
func (f *fleet) checkRows(ctx context.Context) []string {
	var out []string
	for _, t := range f.tables {
		got, err := fingerprintOf(ctx, f, t.ident)
		if err == nil {
			var want fingerprint.Fingerprint
			if want, err = fingerprintOf(ctx, f, t.twin); err == nil && got != want {
				out = append(out, fmt.Sprintf("%s: rows %s, its writer's model %s", t.Name, got, want))
			}
		}
		if err != nil {
			out = append(out, fmt.Sprintf("%s: fingerprint: %v", t.Name, err))
		}
	}
	return out
}

func fingerprintOf(ctx context.Context, f *fleet, ident []string) (fingerprint.Fingerprint, error) {
	tbl, err := f.cat.LoadTable(ctx, ident)
	if err != nil {
		return fingerprint.Fingerprint{}, err
	}
	return fingerprint.Table(ctx, tbl)
}

// checkLeaks lists the files under each table's data location that no
// snapshot the table keeps references and that either a snapshot once
// referenced (expiry should have deleted them) or an icekeeper job wrote
// (its commit or abort should have): leaked bytes. The other unreferenced
// files are the writers' own (a commit attempt that lost to a concurrent
// commit leaves the files it wrote; iceberg-go does not remove them).
func (f *fleet) checkLeaks(ctx context.Context) (leaked, writers []string, err error) {
	attempts := map[string][]string{} // table -> attempts of its jobs
	f.jobsMu.Lock()
	ids := make(map[string]string, len(f.jobIDs))
	for id, t := range f.jobIDs {
		ids[id] = t
	}
	f.jobsMu.Unlock()
	for id, t := range ids {
		groups, err := f.deps.Jobs.Groups(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		for _, g := range groups {
			attempts[t] = append(attempts[t], g.Attempts...)
		}
	}
	for _, t := range f.tables {
		_, unref, err := f.measure(ctx, t)
		if err != nil {
			return leaked, writers, err
		}
		paths := make([]string, 0, len(unref))
		for p := range unref {
			paths = append(paths, p)
		}
		sort.Strings(paths)
	next:
		for _, p := range paths {
			if t.seen.ever[p] {
				leaked = append(leaked, fmt.Sprintf("%s: %s (a snapshot referenced it; none kept does)", t.Name, p))
				continue
			}
			for _, a := range attempts[t.Name] {
				if outputs.OfAttempt(p, a) {
					leaked = append(leaked, fmt.Sprintf("%s: %s (written by icekeeper's attempt %s)", t.Name, p, a))
					continue next
				}
			}
			writers = append(writers, t.Name+": "+p)
		}
	}
	return leaked, writers, nil
}
