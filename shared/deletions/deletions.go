// Package deletions deletes one part of a job's deletions record (an
// expiry's freed files, an orphan cleanup's orphans), as a task on the task
// queue: the committer fans a large record out, one task per part, so a
// table freeing millions of files fits in Lambda's limits.
//
// Invariants, for each task:
//   - it acts only while the job still holds the table's lease (a task of a
//     superseded job is dropped);
//   - it deletes only files that the table does not need, as its catalog
//     has it right before deleting (not a metadata file that a busy
//     table's writer may have removed since): for an expiry, no snapshot of
//     it or of a metadata file of its log references them, apart from the
//     ones the list was made against and the expired ones
//     (expire.StillUnreferenced); for an orphan cleanup, nothing the table
//     or a metadata file of its log references (orphans.Still);
//   - the part's object is removed once its files are; a redelivered task
//     whose part is gone does nothing; deleting a file twice is harmless;
//   - an orphan cleanup's part that orphans.Still refuses (the metadata
//     log names files that are gone, or a reference names a listed file
//     with another scheme or authority) deletes nothing: the task records
//     the refusal (messages.RefusedName) and removes the part, so the job ends
//     failed, loud, at once, instead of its task failing every delivery
//     into the dead-letter queue; so does an expiry's part once the expiry
//     was undone (a snapshot it removed is in the table again:
//     expire.ErrUndone), whose files are needed again;
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

// Blobs reads and removes the parts, lists those left, and records a
// refused part.
type Blobs interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, name string, data []byte) (string, error)
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

// Catalog loads the table as it is now (an orphan cleanup's tasks).
type Catalog interface {
	LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error)
}

// Sender sends the commit request.
type Sender interface {
	Send(ctx context.Context, body string) error
}

// Deleter runs deletion tasks.
type Deleter struct {
	Blobs  Blobs
	Leases Leases
	Tables Tables
	// Catalog loads an orphan cleanup's table right before deleting (nil:
	// its tasks fail, and the committer deletes their parts once it takes
	// the job over).
	Catalog  Catalog
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
	// Refused: the part's files were kept, the cleanup refused (the
	// reason is recorded for the committer).
	Refused string `json:"refused,omitempty"`
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
		var (
			tbl   *table.Table
			paths []string
			bytes int64
		)
		if dt.Orphans {
			tbl, paths, err = d.stillOrphans(ctx, ident, part)
		} else if tbl, err = d.current(ctx, ident, dt.MetadataLocation); err == nil {
			paths, bytes, err = unreferenced(ctx, tbl, dt, part)
		}
		switch {
		case dt.Orphans && errors.Is(err, orphans.ErrRefused), !dt.Orphans && errors.Is(err, expire.ErrUndone):
			// Nothing of this part is deleted, now or on a redelivery.
			if rerr := d.recordRefusal(ctx, task.JobID, part.Index, err); rerr != nil {
				return res, rerr
			}
			res.Refused = err.Error()
			log.Error("deletion refused: this part's files are kept, and the job ends failed", "err", err.Error())
		case err != nil:
			return res, fmt.Errorf("deletions: part %d of job %s: %w", part.Index, task.JobID, err)
		default:
			if err := outputs.Remove(ctx, tbl, paths); err != nil {
				return res, fmt.Errorf("deletions: delete part %d: %w", part.Index, err)
			}
			if !outputs.InTableBucket(tbl.Location()) {
				res.Files, res.Bytes = len(paths), bytes
			}
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
		body, err := messages.Encode(messages.DeletionsDone(task.JobID))
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

// recordRefusal records that part index of a job was refused, before the
// part is removed: the committer ends the job failed with the reason.
func (d Deleter) recordRefusal(ctx context.Context, jobID string, index int, why error) error {
	body, err := messages.Encode(messages.RefusedPart{Version: messages.FormatVersion, JobID: jobID, Part: index, Reason: why.Error()})
	if err != nil {
		return err
	}
	if _, err := d.Blobs.Put(ctx, messages.RefusedName(jobID, index), body); err != nil {
		return fmt.Errorf("deletions: record the refusal of part %d: %w", index, err)
	}
	return nil
}

// stillOrphans loads the table from the catalog and keeps the part's
// files nothing it can reach references (orphans.Still); it returns the
// table loaded last.
func (d Deleter) stillOrphans(ctx context.Context, ident table.Identifier, part messages.DeletionPart) (*table.Table, []string, error) {
	if d.Catalog == nil {
		return nil, nil, errors.New("no catalog to load the table from before deleting orphans")
	}
	var tbl *table.Table
	load := func(ctx context.Context) (*table.Table, error) {
		t, err := d.Catalog.LoadTable(ctx, ident)
		if err == nil {
			tbl = t
		}
		return t, err
	}
	all := make([]string, len(part.Files))
	for i, f := range part.Files {
		all[i] = f.Path
	}
	still, err := orphans.Still(ctx, load, all)
	return tbl, still, err
}

// current is the table as the catalog has it now, which an expiry's part
// is checked against (what was committed since the expiry, and every
// metadata file of its log: expire.StillUnreferenced); the task's
// metadata file only without a catalog. A fixed metadata file would fail
// every delivery once a writer with write.metadata.delete-after-commit
// .enabled removed it, and would miss what was committed since.
func (d Deleter) current(ctx context.Context, ident table.Identifier, metadataLocation string) (*table.Table, error) {
	if d.Catalog == nil || outputs.InTableBucket(metadataLocation) {
		// In an S3 table bucket nothing is deleted (package outputs), and
		// rewriters have no catalog permission there.
		return d.Tables.OpenMetadata(ctx, ident, metadataLocation)
	}
	return d.Catalog.LoadTable(ctx, ident)
}

// unreferenced keeps the part's files of an expiry that no kept snapshot
// references.
func unreferenced(ctx context.Context, tbl *table.Table, dt *messages.DeleteTask, part messages.DeletionPart) ([]string, int64, error) {
	var paths []string
	var bytes int64
	files := make([]expire.File, len(part.Files))
	for i, f := range part.Files {
		files[i] = expire.File{Path: f.Path, Kind: f.Kind, Bytes: f.Bytes}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("deletions: open table IO: %w", err)
	}
	files, err = expire.StillUnreferenced(ctx, fsys, tbl.Metadata(), messages.Int64s(dt.Kept), messages.Int64s(dt.Expired), files)
	if err != nil {
		return nil, 0, err
	}
	for _, f := range files {
		paths = append(paths, f.Path)
		bytes += f.Bytes
	}
	return paths, bytes, nil
}
