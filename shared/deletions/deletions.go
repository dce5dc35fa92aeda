// Package deletions deletes one part of a job's deletions record (an
// expiry's freed files, an orphan cleanup's orphans), as a task on the task
// queue: the committer fans a large record out, one task per part, so a
// table freeing millions of files fits in Lambda's limits.
//
// Invariants, for each task:
//   - it acts only while the job still holds the table's lease (a task of a
//     superseded job is dropped);
//   - it deletes only files that the table's metadata at the task's
//     metadata location does not need: for an expiry no snapshot but the
//     kept ones the list was made against references them
//     (expire.StillUnreferenced), for an orphan cleanup no metadata does
//     (orphans.Still);
//   - the part's object is removed once its files are; a redelivered task
//     whose part is gone does nothing; deleting a file twice is harmless;
//   - the task that finds no part left sends the commit request that lets
//     the committer finish the job (several may: the committer finishes it
//     once).
package deletions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/orphans"
	"github.com/icekeeper/icekeeper/shared/outputs"
)

// Blobs reads and removes the parts, and lists those left.
type Blobs interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, prefix string) ([]string, error)
}

// Leases renews the job's lease.
type Leases interface {
	Renew(ctx context.Context, l lease.Lease, ttl time.Duration) (lease.Lease, error)
}

// Tables opens a table at a metadata file.
type Tables interface {
	OpenMetadata(ctx context.Context, ident table.Identifier, metadataLocation string) (*table.Table, error)
}

// Sender sends the commit request.
type Sender interface {
	Send(ctx context.Context, body string) error
}

// Deleter runs deletion tasks.
type Deleter struct {
	Blobs    Blobs
	Leases   Leases
	Tables   Tables
	Commits  Sender
	LeaseTTL time.Duration
	Log      *slog.Logger
}

// Result says what one task did.
type Result struct {
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
	Dropped bool  `json:"dropped,omitempty"`
	// Last: no part was left; the commit request was sent.
	Last bool `json:"last,omitempty"`
}

// Handle deletes the part the task names.
func (d Deleter) Handle(ctx context.Context, task messages.Task) (Result, error) {
	var res Result
	dt := task.Delete
	if dt == nil {
		return res, fmt.Errorf("deletions: task of job %s is not a deletion task", task.JobID)
	}
	log := d.Log.With("job_id", task.JobID, "table", task.Table, "part", dt.PartKey)
	term := lease.Lease{Table: task.Table, Owner: task.JobID, Token: task.Token}
	if _, err := d.Leases.Renew(ctx, term, d.LeaseTTL); err != nil {
		if errors.Is(err, lease.ErrLost) {
			log.Info("dropped: the job no longer holds the table")
			return Result{Dropped: true}, nil
		}
		return res, err
	}
	b, err := d.Blobs.Get(ctx, dt.PartKey)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		// Done by an earlier delivery.
	case err != nil:
		return res, fmt.Errorf("deletions: read part: %w", err)
	default:
		var part messages.DeletionPart
		if err := messages.Decode(b, &part); err != nil {
			return res, fmt.Errorf("deletions: part %s: %w", dt.PartKey, err)
		}
		ident, err := messages.TableIdent(task.Table)
		if err != nil {
			return res, err
		}
		tbl, err := d.Tables.OpenMetadata(ctx, ident, dt.MetadataLocation)
		if err != nil {
			return res, fmt.Errorf("deletions: %w", err)
		}
		paths, bytes, err := deletable(ctx, tbl, dt, part)
		if err != nil {
			return res, err
		}
		if err := outputs.Remove(ctx, tbl, paths); err != nil {
			return res, fmt.Errorf("deletions: delete part %d: %w", part.Index, err)
		}
		if !outputs.InTableBucket(tbl.Location()) {
			res.Files, res.Bytes = len(paths), bytes
		}
		if err := d.Blobs.Delete(ctx, dt.PartKey); err != nil {
			return res, fmt.Errorf("deletions: remove part object: %w", err)
		}
	}
	left, err := d.Blobs.List(ctx, "jobs/"+task.JobID+"/deletions/")
	if err != nil {
		return res, fmt.Errorf("deletions: list parts left: %w", err)
	}
	if len(left) == 0 {
		body, err := messages.Encode(messages.CommitRequest{Version: messages.FormatVersion, JobID: task.JobID, DeletionsDone: true})
		if err != nil {
			return res, err
		}
		if err := d.Commits.Send(ctx, string(body)); err != nil {
			return res, fmt.Errorf("deletions: send the commit request: %w", err)
		}
		res.Last = true
	}
	log.Info("deletion part done", "files", res.Files, "bytes", res.Bytes, "last", res.Last)
	return res, nil
}

// deletable keeps the part's files the table does not need.
func deletable(ctx context.Context, tbl *table.Table, dt *messages.DeleteTask, part messages.DeletionPart) ([]string, int64, error) {
	var paths []string
	var bytes int64
	if dt.Orphans {
		all := make([]string, len(part.Files))
		for i, f := range part.Files {
			all[i] = f.Path
		}
		still, err := orphans.Still(ctx, func(context.Context) (*table.Table, error) { return tbl, nil }, all)
		return still, 0, err
	}
	files := make([]expire.File, len(part.Files))
	for i, f := range part.Files {
		files[i] = expire.File{Path: f.Path, Kind: f.Kind, Bytes: f.Bytes}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("deletions: open table IO: %w", err)
	}
	files, err = expire.StillUnreferenced(ctx, fsys, tbl.Metadata(), messages.Int64s(dt.Kept), files)
	if err != nil {
		return nil, 0, err
	}
	for _, f := range files {
		paths = append(paths, f.Path)
		bytes += f.Bytes
	}
	return paths, bytes, nil
}
