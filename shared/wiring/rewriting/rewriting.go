// Package rewriting builds the rewriter stage from the shared wiring. It
// links no catalog client: rewriters open the pinned metadata file.
package rewriting

import (
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/deletions"
	"github.com/icekeeper/icekeeper/shared/listing"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	"github.com/icekeeper/icekeeper/shared/wiring"
)

// Needs lists the rewriter's resources.
var Needs = []config.Need{config.NeedLeases, config.NeedJobs, config.NeedBucket, config.NeedTaskQueue, config.NeedCommitQueue}

// Rewriter builds the rewriter.
func Rewriter(d *wiring.Deps) (*rewrite.Rewriter, error) {
	s := rewrite.Settings{MaxAttempts: d.Config.MaxTaskAttempts, ScanConcurrency: d.Config.ScanConcurrency, LeaseTTL: d.Config.LeaseTTL, SortWindowBytes: d.Config.SortWindowBytes, ExchangePageBytes: d.Config.ExchangePageBytes}
	if limit := wiring.MemoryLimit(); limit > 0 && s.SortWindowBytes == 0 {
		// A sort window of a quarter of the memory limit: the reader's
		// pages, the writer's open row group and the batches in flight
		// fit beside it.
		s.SortWindowBytes = limit / 4
	}
	r, err := rewrite.New(s,
		d.Jobs, d.Leases, d.Blobs, d.Commits, d.Tables, d.Log.With("stage", "rewriter"), d.Now)
	if err == nil {
		r.SetMetrics(d.Metrics)
		r.SetTracer(d.Tracer)
	}
	return r, err
}

// Deleter builds the runner of deletion tasks (the fanned-out deletions of
// an expiry or an orphan cleanup).
func Deleter(d *wiring.Deps) deletions.Deleter {
	return deletions.Deleter{Blobs: d.Blobs, Leases: d.Leases, Tables: d.Tables, Commits: d.Commits, LeaseTTL: d.Config.LeaseTTL, Log: d.Log.With("stage", "deleter")}
}

// Lister builds the runner of listing tasks (the fanned-out listing of an
// orphan cleanup).
func Lister(d *wiring.Deps) listing.Lister {
	return listing.Lister{Blobs: d.Blobs, Leases: d.Leases, Tables: d.Tables, Commits: d.Commits, LeaseTTL: d.Config.LeaseTTL, Log: d.Log.With("stage", "lister")}
}
