// Package listing lists one prefix of a table's location for orphan files,
// as a task on the task queue: an orphan cleanup of a table too large to
// list in one function fans its listing out, one task per prefix
// (orphans.Prefixes), so a location of millions of objects is listed
// by many workers, each holding only its prefix's references.
//
// Invariants, for each task:
//   - it acts only while the job still holds the table's lease (a task of a
//     superseded job is dropped);
//   - it deletes nothing: it writes what it found (messages.FoundOrphans)
//     and then removes its marker, in that order, so a marker gone means
//     its prefix's findings are stored;
//   - a redelivered task whose marker is gone lists nothing again;
//   - the task that finds no marker left sends the commit request that
//     lets the committer merge the findings (several may: the committer
//     merges once the markers are gone, and merging twice is the same).
package listing

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/orphans"
)

// Blobs reads, writes and removes the markers and findings.
type Blobs interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, key string, body []byte) (string, error)
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

// Catalog loads the table as it is now, for a task whose metadata file is
// gone (a writer that deletes old metadata files moved the table on).
type Catalog interface {
	LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error)
}

// Sender sends the commit request.
type Sender interface {
	Send(ctx context.Context, body string) error
}

// MarkersPrefix is where a job's listing markers are, FoundPrefix what
// its prefixes found (names relative to icekeeper's bucket prefix).
func MarkersPrefix(jobID string) string { return "jobs/" + jobID + "/listing/" }

// FoundPrefix: see MarkersPrefix.
func FoundPrefix(jobID string) string { return "jobs/" + jobID + "/found/" }

// RecordName is the name of a job's Listing record.
func RecordName(jobID string) string { return "jobs/" + jobID + "/listing.json" }

// Names names prefix i's marker and findings.
func Names(jobID string, i int) (marker, found string) {
	return fmt.Sprintf("%s%06d.json", MarkersPrefix(jobID), i), fmt.Sprintf("%s%06d.json", FoundPrefix(jobID), i)
}

// Lister runs listing tasks.
type Lister struct {
	Blobs  Blobs
	Leases Leases
	Tables Tables
	// Catalog loads the table when the task's metadata file is gone (nil:
	// such a task fails, and the committer lists its prefix once it takes
	// the job over).
	Catalog  Catalog
	Commits  Sender
	LeaseTTL time.Duration
	Log      *slog.Logger
}

// Result says what one task did.
type Result struct {
	Orphans int  `json:"orphans"`
	Dropped bool `json:"dropped,omitempty"`
	// Last: no marker was left; the commit request was sent.
	Last bool `json:"last,omitempty"`
}

// Handle lists the prefix the task names.
func (l Lister) Handle(ctx context.Context, task messages.Task) (Result, error) {
	var res Result
	lt := task.List
	if lt == nil {
		return res, fmt.Errorf("listing: task of job %s is not a listing task", task.JobID)
	}
	log := l.Log.With("job_id", task.JobID, "table", task.Table, "prefix", lt.Prefix)
	term := lease.Lease{Table: task.Table, Owner: task.JobID, Token: task.Token}
	if _, err := l.Leases.Renew(ctx, term, l.LeaseTTL); err != nil {
		if errors.Is(err, lease.ErrLost) {
			log.Info("dropped: the job no longer holds the table")
			return Result{Dropped: true}, nil
		}
		return res, err
	}
	n, err := List(ctx, l.Blobs, l.Tables, l.Catalog, task.JobID, task.Table, *lt)
	if err != nil {
		return res, err
	}
	res.Orphans = n
	left, err := l.Blobs.List(ctx, MarkersPrefix(task.JobID))
	if err != nil {
		return res, fmt.Errorf("listing: list markers left: %w", err)
	}
	if len(left) == 0 {
		body, err := messages.Encode(messages.ListingDone(task.JobID))
		if err != nil {
			return res, err
		}
		if err := l.Commits.Send(ctx, string(body)); err != nil {
			return res, fmt.Errorf("listing: send the commit request: %w", err)
		}
		res.Last = true
	}
	log.Info("prefix listed", "orphans", res.Orphans, "last", res.Last)
	return res, nil
}

// List lists one prefix unless its marker is gone (listed before): it
// writes the orphans found, then removes the marker. It returns how many
// it found (0 when the marker was gone). The committer runs it too, for
// the markers a dead committer's tasks left.
//
// It lists against the task's metadata file; once that file, or one of
// its metadata log, is gone (a busy table whose writer deletes old
// metadata files), against the table cat has now: a newer table only
// references more, and the committer checks again before deleting.
func List(ctx context.Context, blobs Blobs, tables Tables, cat Catalog, jobID, tableName string, lt messages.ListTask) (int, error) {
	if lt.MarkerKey == "" || lt.FoundName == "" {
		return 0, fmt.Errorf("listing: task of job %s names no marker or no findings", jobID)
	}
	if _, err := blobs.Get(ctx, lt.MarkerKey); errors.Is(err, blob.ErrNotFound) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("listing: read marker: %w", err)
	}
	ident, err := messages.TableIdent(tableName)
	if err != nil {
		return 0, err
	}
	prefix, olderThan := orphans.Prefix{Path: lt.Prefix, Shallow: lt.Shallow}, time.UnixMilli(lt.OlderThanUnixMillis)
	var found orphans.Found
	tbl, err := tables.OpenMetadata(ctx, ident, lt.MetadataLocation)
	if err == nil {
		found, err = orphans.Find(ctx, tbl, prefix, olderThan)
	}
	for i := 0; errors.Is(err, iofs.ErrNotExist) && cat != nil && i < 3; i++ {
		if tbl, err = cat.LoadTable(ctx, ident); err == nil {
			found, err = orphans.Find(ctx, tbl, prefix, olderThan)
		}
	}
	refused := ""
	if errors.Is(err, orphans.ErrRefused) {
		// Every delivery would refuse alike: the refusal is what this
		// prefix found, and the committer ends the job failed with it.
		refused, err = err.Error(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing: prefix %s of job %s: %w", lt.Prefix, jobID, err)
	}
	out := messages.FoundOrphans{Version: messages.FormatVersion, JobID: jobID, Prefix: lt.Prefix, Files: make([]messages.FileRef, len(found.Orphans)), Metadata: found.Metadata, Refused: refused}
	for i, f := range found.Orphans {
		out.Files[i] = messages.FileRef{Path: f.Path, Kind: "orphan", Bytes: f.Bytes}
	}
	body, err := messages.Encode(out)
	if err != nil {
		return 0, err
	}
	if _, err := blobs.Put(ctx, lt.FoundName, body); err != nil {
		return 0, fmt.Errorf("listing: write what was found: %w", err)
	}
	if err := blobs.Delete(ctx, lt.MarkerKey); err != nil {
		return 0, fmt.Errorf("listing: remove marker: %w", err)
	}
	return len(found.Orphans), nil
}
