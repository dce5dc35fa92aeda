// Package rewriter is the rewriter function's stage: Rewriter, Deleter and
// Lister build package rewrite's rewriter and the deletion and listing
// tasks' workers from the shared stage, and Handler decodes each task of
// an SQS batch, hands it to the worker of its kind (messages.TaskKind),
// reports failures per message, brings a failed task back after
// rewrite.RetryDelay, and keeps a running task invisible by a heartbeat,
// so a rewriter that dies lets its task come back within minutes.
// Rewriters open the pinned metadata file; only an
// orphan cleanup's tasks load a table from the catalog (Catalog, opened on
// first use): a deletion task right before deleting, a listing task whose
// metadata file is gone. The handler knows nothing of AWS clients or
// configuration.
package rewriter

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/deletions"
	"github.com/icekeeper/icekeeper/shared/listing"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	"github.com/icekeeper/icekeeper/shared/stage"
)

// Needs lists the rewriter's resources.
var Needs = []config.Need{config.NeedLeases, config.NeedJobs, config.NeedBucket, config.NeedTaskQueue, config.NeedCommitQueue}

// Rewriter builds the rewriter.
func Rewriter(d *stage.Deps) (*rewrite.Rewriter, error) {
	s := rewrite.Settings{MaxAttempts: d.Config.MaxTaskAttempts, ScanConcurrency: d.Config.ScanConcurrency, LeaseTTL: d.Config.LeaseTTL, SortWindowBytes: d.Config.SortWindowBytes, ExchangePageBytes: d.Config.ExchangePageBytes, InlineRowMapBytes: d.Config.InlineRowMapBytes}
	if limit := stage.MemoryLimit(); limit > 0 && s.SortWindowBytes == 0 {
		// A sort window of a quarter of the memory limit: the reader's
		// pages, the writer's open row group and the batches in flight
		// fit beside it.
		s.SortWindowBytes = limit / 4
	}
	return rewrite.New(s, d.Jobs, d.Leases, d.Blobs, d.Commits, d.Tables, d.Log.With("stage", "rewriter"), d.Now,
		rewrite.Options{Metrics: d.Metrics, Tracer: d.Tracer})
}

// Deleter builds the runner of deletion tasks (the fanned-out deletions of
// an expiry or an orphan cleanup); cat loads an orphan cleanup's table
// (Catalog).
func Deleter(d *stage.Deps, cat deletions.Catalog) deletions.Deleter {
	return deletions.Deleter{Blobs: d.Blobs, Leases: d.Leases, Tables: d.Tables, Catalog: cat, Commits: d.Commits, LeaseTTL: d.Config.LeaseTTL, Log: d.Log.With("stage", "deleter")}
}

// Lister builds the runner of listing tasks (the fanned-out listing of an
// orphan cleanup); cat loads a table whose metadata file is gone.
func Lister(d *stage.Deps, cat listing.Catalog) listing.Lister {
	return listing.Lister{Blobs: d.Blobs, Leases: d.Leases, Tables: d.Tables, Catalog: cat, Commits: d.Commits, LeaseTTL: d.Config.LeaseTTL, Log: d.Log.With("stage", "lister")}
}

// Catalog is the configured catalog, opened on the first table loaded from
// it (a rewriter that runs no orphan cleanup task never opens it); a
// failed open is tried again on the next load.
func Catalog(d *stage.Deps) *LazyCatalog { return &LazyCatalog{deps: d} }

// LazyCatalog loads tables from the configured catalog, opened on first
// use.
type LazyCatalog struct {
	deps *stage.Deps
	mu   sync.Mutex
	cat  catalog.Catalog
}

// LoadTable loads the table from the catalog.
func (l *LazyCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	l.mu.Lock()
	if l.cat == nil {
		cat, err := catalogs.OpenWithFile(ctx, l.deps.Config.Catalog, l.deps.Clients.Config)
		if err != nil {
			l.mu.Unlock()
			return nil, fmt.Errorf("open the catalog: %w", err)
		}
		l.cat = cat
	}
	cat := l.cat
	l.mu.Unlock()
	return cat.LoadTable(ctx, ident)
}
