// Package churn is a busy table's writer, for the tests and the
// benchmark. On a schedule it commits, in one transaction, rows appended
// to every partition and a merge-on-read delete of earlier rows (position
// delete files on v2, deletion vectors on v3), the way a CDC or upsert
// stream does, to a table that icekeeper maintains; then it commits the
// same change to a twin table that nothing maintains.
//
// Invariant: the twin is written by the Writer alone and receives exactly
// the changes the maintained table received, in the same order, so once
// the Writer stopped the two hold the same rows if and only if maintenance
// lost, duplicated and resurrected none: compare their fingerprints.
package churn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
)

// Catalog loads tables (commits go through each table's own catalog).
type Catalog interface {
	LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error)
}

// Options shape the writes.
type Options struct {
	// Interval is the time between the starts of two commits.
	Interval time.Duration
	// Partitions is the number of the sample table's partitions;
	// AppendPerPartition the rows appended to each per commit.
	Partitions, AppendPerPartition int
	// Deletes is how many ids, drawn from every id written so far, each
	// commit deletes (an id already gone deletes nothing, in both tables).
	Deletes int
	// SampleRows: ids 0 to SampleRows-1 are the sample table's rows.
	SampleRows int64
	// FirstID is the first id the Writer appends (at least SampleRows).
	FirstID int64
	// Seed makes the drawn ids reproducible.
	Seed uint64
	// MaxConflicts bounds the retries of one commit (0: 50).
	MaxConflicts int
	// Equality deletes the drawn ids with an equality delete file (a CDC
	// upsert stream's), keyed on id and, when RegionOf is set (a
	// partitioned table), on the row's region; otherwise with a
	// merge-on-read delete (position deletes on v2, deletion vectors on
	// v3).
	Equality bool
	RegionOf func(id int64) string
	// OverwriteEvery, when positive, makes every OverwriteEvery-th commit
	// an overwrite: it deletes every row of one region (the regions in
	// turn) instead of the drawn ids, and appends as usual.
	OverwriteEvery int
	// Delay is the time before the first commit (spreads many writers).
	Delay time.Duration
	// AfterCommit, when set, runs after each commit of the maintained
	// table (a commit event's sender).
	AfterCommit func(ctx context.Context)
}

// Stats is what the Writer did.
type Stats struct {
	Commits int
	// Conflicts are commits of the maintained table that met a newer
	// snapshot (icekeeper's, mostly) and were retried.
	Conflicts    int
	RowsAppended int64
}

// Writer writes until stopped.
type Writer struct {
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	stats Stats
	err   error
}

// Start starts writing to ident and twin.
func Start(ctx context.Context, cat Catalog, ident, twin table.Identifier, o Options) *Writer {
	if o.MaxConflicts <= 0 {
		o.MaxConflicts = 50
	}
	o.FirstID = max(o.FirstID, o.SampleRows)
	w := &Writer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
		next := o.FirstID
		if o.Delay > 0 {
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(o.Delay):
			}
		}
		tick := time.NewTicker(o.Interval)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				w.fail(ctx.Err())
				return
			case <-tick.C:
			}
			ids := make([]int64, o.Deletes)
			for i := range ids {
				// Uniform over the ids written: the sample's, then the
				// Writer's own.
				k := rng.Int64N(o.SampleRows + next - o.FirstID)
				if k >= o.SampleRows {
					k += o.FirstID - o.SampleRows
				}
				ids[i] = k
			}
			var region string
			if o.OverwriteEvery > 0 && (w.stats.Commits+1)%o.OverwriteEvery == 0 {
				region = sampletable.Region(w.stats.Commits / o.OverwriteEvery % max(o.Partitions, 1))
			}
			conflicts, err := commitChange(ctx, cat, ident, ids, region, next, o, o.MaxConflicts)
			if err == nil && o.AfterCommit != nil {
				o.AfterCommit(ctx)
			}
			if err == nil {
				_, err = commitChange(ctx, cat, twin, ids, region, next, o, 0)
			}
			if err != nil {
				w.fail(err)
				return
			}
			next += int64(o.Partitions * o.AppendPerPartition)
			w.mu.Lock()
			w.stats.Commits++
			w.stats.Conflicts += conflicts
			w.stats.RowsAppended += int64(o.Partitions * o.AppendPerPartition)
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *Writer) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

// Stop stops writing, waits for the commit in progress, and reports.
func (w *Writer) Stop() (Stats, error) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats, w.err
}

// Stats reports what the Writer did so far.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// commitChange deletes ids (or, with region set, every row of that
// region) and appends the next rows in one transaction, reloading and
// retrying on a stale base up to maxConflicts times.
func commitChange(ctx context.Context, cat Catalog, ident table.Identifier, ids []int64, region string, first int64, o Options, maxConflicts int) (int, error) {
	for conflicts := 0; ; conflicts++ {
		err := func() error {
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				return fmt.Errorf("churn: load %v: %w", ident, err)
			}
			rows, err := sampletable.Rows(first, o.Partitions, o.AppendPerPartition)
			if err != nil {
				return err
			}
			defer rows.Release()
			txn := tbl.NewTransaction()
			switch {
			case region != "":
				if err := txn.Delete(ctx, iceberg.EqualTo(iceberg.Reference("region"), region), nil); err != nil {
					return fmt.Errorf("churn: overwrite %s: %w", region, err)
				}
			case len(ids) > 0 && o.Equality:
				if err := sampletable.StageEqualityDelete(ctx, txn, ids, o.RegionOf); err != nil {
					return fmt.Errorf("churn: %w", err)
				}
			case len(ids) > 0:
				if err := txn.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil); err != nil {
					return fmt.Errorf("churn: delete: %w", err)
				}
			}
			if err := txn.Append(ctx, rows, nil); err != nil {
				return fmt.Errorf("churn: append: %w", err)
			}
			_, err = txn.Commit(ctx)
			return err
		}()
		if err == nil {
			return conflicts, nil
		}
		if !commit.IsConflict(err) || conflicts >= maxConflicts {
			return conflicts, fmt.Errorf("churn: commit to %v after %d conflicts: %w", ident, conflicts, err)
		}
	}
}
