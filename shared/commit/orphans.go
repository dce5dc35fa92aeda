package commit

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/listing"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/orphans"
)

// removeOrphans runs an orphan cleanup job (jobs.KindRemoveOrphans) in the
// committing state, under the table's lease. The committer decides again
// on the table as it is now: it lists the orphans older than the plan's
// safety age, refuses a shared location, keeps what it may delete (under
// data/ and metadata/, not named for an attempt the plan saw in flight),
// records them (messages.Deletions, so a committer that dies resumes the
// same list part by part) and deletes each part after checking its files
// are still referenced by nothing. Nothing is committed to the catalog.
//
// A plan with ListFanOut has the listing fanned out first (listFannedOut);
// listingDone says the request came from the last listing task.
func (c *Committer) removeOrphans(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, listingDone bool) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table}
	b, err := c.blobs.Get(ctx, job.PlanKey)
	if err != nil {
		return res, fmt.Errorf("read orphan plan: %w", err)
	}
	var plan messages.OrphanPlan
	if err := messages.Decode(b, &plan); err != nil {
		return res, fmt.Errorf("%w: orphan plan: %w", ErrInvariant, err)
	}
	cur, err := c.catalog.LoadTable(ctx, ident)
	if err != nil {
		return res, fmt.Errorf("load table %s: %w", job.Table, classify(err))
	}
	if _, err := c.leases.Renew(ctx, term, c.settings.LeaseTTL); err != nil {
		if errors.Is(err, lease.ErrLost) {
			return res, fmt.Errorf("%w before deleting", errLeaseLost)
		}
		return res, err
	}
	rec, found, err := c.readDeletions(ctx, job)
	if err != nil {
		return res, err
	}
	if !found {
		if gc, err := expire.GCEnabled(cur.Properties()); err != nil || !gc {
			return res, fmt.Errorf("%w: %v", ErrAborted, errors.Join(err, expire.ErrGCDisabled))
		}
		olderThan := job.CreatedAt.Add(-time.Duration(plan.OlderThanMillis) * time.Millisecond)
		var found orphans.Found
		if plan.ListFanOut && c.fanOut != nil {
			var done bool
			found, done, err = c.listFannedOut(ctx, log, job, cur, olderThan, listingDone)
			if err != nil {
				return res, refused(err)
			}
			if !done {
				res.Outcome, res.Reason = OutcomeWaiting, "listing fanned out"
				return res, nil
			}
		} else if found, err = c.findOrphans(ctx, ident, cur, olderThan); err != nil {
			return res, refused(fmt.Errorf("list orphans: %w", err))
		}
		paths := make([]string, len(found.Orphans))
		size := make(map[string]int64, len(found.Orphans))
		for i, f := range found.Orphans {
			paths[i], size[f.Path] = f.Path, f.Bytes
		}
		cat, _ := c.catalog.(orphans.Catalog)
		if err := orphans.Shared(ctx, cur, found.Metadata, cat); err != nil {
			return res, refused(err)
		}
		deletable, _ := orphans.Deletable(cur.Location(), paths, plan.InFlightAttempts)
		refs := make([]messages.FileRef, len(deletable))
		for i, p := range deletable {
			refs[i] = messages.FileRef{Path: p, Kind: "orphan", Bytes: size[p]}
		}
		var parts []messages.DeletionPart
		rec, parts = messages.SplitDeletions(job.ID, job.Table, refs, c.settings.DeletionPartFiles, func(i int) string { return deletionPartName(job.ID, i) })
		if err := putDeletions(ctx, c.blobs, job, &rec, parts); err != nil {
			return res, err
		}
	}
	if c.fanOut != nil && len(rec.Parts) >= c.fanOutParts {
		return c.fanOutDeletions(ctx, log, job, cur, rec, messages.DeleteTask{MetadataLocation: cur.MetadataLocation(), Orphans: true})
	}
	deleted, err := c.deleteParts(ctx, log, term, cur, rec, func(files []expire.File) ([]expire.File, error) {
		paths := make([]string, len(files))
		for i, f := range files {
			paths[i] = f.Path
		}
		// Against the table as the catalog has it now, and every metadata
		// file of its log, right before this part is deleted.
		still, err := orphans.Still(ctx, func(ctx context.Context) (*table.Table, error) {
			t, err := c.catalog.LoadTable(ctx, ident)
			if err != nil {
				return nil, fmt.Errorf("load table %s: %w", job.Table, classify(err))
			}
			return t, nil
		}, paths)
		if err != nil {
			return nil, refused(err)
		}
		keep := map[string]bool{}
		for _, p := range still {
			keep[p] = true
		}
		var out []expire.File
		for _, f := range files {
			if keep[f.Path] {
				out = append(out, f)
			}
		}
		return out, nil
	})
	if err != nil {
		return res, err
	}
	out, err := c.finish(ctx, log, job, term, currentID(cur), fmt.Sprintf("removed %d orphan files older than %s", deleted.FilesDeleted, time.Duration(plan.OlderThanMillis)*time.Millisecond))
	out.OrphansRemoved = deleted.FilesDeleted
	return out, err
}

// listFannedOut runs an orphan cleanup's fanned-out listing (package
// listing) and, once every prefix is listed, returns what was found,
// sorted by path. The first call splits the location into prefixes
// (orphans.Prefixes), writes one marker per prefix, then the Listing
// record, and sends one task per prefix; it is not done. Later calls find
// the record: with markers left, a call from the last task (waitForTasks)
// waits for them, any other call (a committer that took the job over, its
// tasks perhaps lost) lists what is left itself. With no marker left, the
// findings are merged.
func (c *Committer) listFannedOut(ctx context.Context, log *slog.Logger, job jobs.Job, cur *table.Table, olderThan time.Time, waitForTasks bool) (orphans.Found, bool, error) {
	var none orphans.Found
	recKey := strings.TrimSuffix(job.PlanKey, "plan.json") + "listing.json"
	b, err := c.blobs.Get(ctx, recKey)
	if errors.Is(err, blob.ErrNotFound) {
		return none, false, c.startListing(ctx, log, job, cur, olderThan)
	}
	if err != nil {
		return none, false, fmt.Errorf("read listing record: %w", err)
	}
	var rec messages.Listing
	if err := messages.Decode(b, &rec); err != nil {
		return none, false, fmt.Errorf("%w: listing record of job %s: %w", ErrInvariant, job.ID, err)
	}
	left, err := c.blobs.List(ctx, listing.MarkersPrefix(job.ID))
	if err != nil {
		return none, false, fmt.Errorf("list listing markers: %w", err)
	}
	if len(left) > 0 && waitForTasks {
		log.Info("waiting for listing tasks", "prefixes_left", len(left))
		return none, false, nil
	}
	for _, key := range left {
		b, err := c.blobs.Get(ctx, key)
		if errors.Is(err, blob.ErrNotFound) {
			continue // listed meanwhile
		}
		if err != nil {
			return none, false, fmt.Errorf("read listing marker: %w", err)
		}
		var task messages.Task
		if err := messages.Decode(b, &task); err != nil {
			return none, false, fmt.Errorf("%w: listing marker %s: %w", ErrInvariant, key, err)
		}
		if task.List == nil {
			return none, false, fmt.Errorf("%w: listing marker %s holds no listing task", ErrInvariant, key)
		}
		if _, err := listing.List(ctx, c.blobs, c.tables, c.catalog, job.ID, job.Table, *task.List); err != nil {
			return none, false, err
		}
	}
	keys, err := c.blobs.List(ctx, listing.FoundPrefix(job.ID))
	if err != nil {
		return none, false, fmt.Errorf("list what the prefixes found: %w", err)
	}
	if len(keys) != len(rec.Markers) {
		return none, false, fmt.Errorf("%w: job %s listed %d prefixes, found %d results", ErrInvariant, job.ID, len(rec.Markers), len(keys))
	}
	var out orphans.Found
	for _, key := range keys {
		b, err := c.blobs.Get(ctx, key)
		if err != nil {
			return none, false, fmt.Errorf("read what a prefix found: %w", err)
		}
		var f messages.FoundOrphans
		if err := messages.Decode(b, &f); err != nil {
			return none, false, fmt.Errorf("%w: found orphans %s: %w", ErrInvariant, key, err)
		}
		if f.Refused != "" {
			return none, false, fmt.Errorf("%w: listing prefix %s: %s", orphans.ErrRefused, f.Prefix, f.Refused)
		}
		for _, r := range f.Files {
			out.Orphans = append(out.Orphans, orphans.File{Path: r.Path, Bytes: r.Bytes})
		}
		out.Metadata = append(out.Metadata, f.Metadata...)
	}
	sort.Slice(out.Orphans, func(i, j int) bool { return out.Orphans[i].Path < out.Orphans[j].Path })
	sort.Strings(out.Metadata)
	log.Info("listing merged", "prefixes", len(keys), "orphans", len(out.Orphans), "metadata", len(out.Metadata))
	return out, true, nil
}

// startListing writes the markers and the record, then sends the tasks.
// A committer that dies before the record is written is followed by one
// that starts again (markers and findings are overwritten with the same
// names); one that dies after it is followed by one that lists what is
// left.
func (c *Committer) startListing(ctx context.Context, log *slog.Logger, job jobs.Job, cur *table.Table, olderThan time.Time) error {
	prefixes, err := orphans.Prefixes(ctx, cur)
	if err != nil {
		return fmt.Errorf("split the location for listing: %w", err)
	}
	rec := messages.Listing{Version: messages.FormatVersion, JobID: job.ID, Table: job.Table, MetadataLocation: cur.MetadataLocation()}
	var bodies []string
	for i, p := range prefixes {
		marker, found := listing.Names(job.ID, i)
		lt := messages.ListTask{FoundName: found, MetadataLocation: cur.MetadataLocation(), Prefix: p.Path, Shallow: p.Shallow, OlderThanUnixMillis: olderThan.UnixMilli()}
		task := messages.NewListTask(job.ID, job.Table, job.Token, lt)
		key, err := putEncoded(ctx, c.blobs, marker, task)
		if err != nil {
			return fmt.Errorf("write listing marker: %w", err)
		}
		// The marker holds the task with its own key.
		task.List.MarkerKey = key
		if _, err := putEncoded(ctx, c.blobs, marker, task); err != nil {
			return fmt.Errorf("write listing marker: %w", err)
		}
		rec.Markers = append(rec.Markers, key)
		b, err := messages.Encode(task)
		if err != nil {
			return err
		}
		bodies = append(bodies, string(b))
	}
	if _, err := putEncoded(ctx, c.blobs, listing.RecordName(job.ID), rec); err != nil {
		return fmt.Errorf("write listing record: %w", err)
	}
	for _, b := range bodies {
		if err := c.fanOut.Send(ctx, b); err != nil {
			return fmt.Errorf("send listing task: %w", err)
		}
	}
	log.Info("listing fanned out", "prefixes", len(prefixes))
	return nil
}

// putEncoded encodes v and writes it at name, returning its full key.
func putEncoded(ctx context.Context, blobs Blobs, name string, v any) (string, error) {
	body, err := messages.Encode(v)
	if err != nil {
		return "", err
	}
	return blobs.Put(ctx, name, body)
}

// findOrphans lists the table's location (orphans.Find); when a file of
// its metadata log is gone meanwhile (a writer deleting old metadata
// files), it loads the table again, a few times.
func (c *Committer) findOrphans(ctx context.Context, ident table.Identifier, cur *table.Table, olderThan time.Time) (orphans.Found, error) {
	found, err := orphans.Find(ctx, cur, orphans.Prefix{}, olderThan)
	for i := 0; errors.Is(err, iofs.ErrNotExist) && i < 3; i++ {
		if cur, err = c.catalog.LoadTable(ctx, ident); err != nil {
			return found, classify(err)
		}
		found, err = orphans.Find(ctx, cur, orphans.Prefix{}, olderThan)
	}
	return found, err
}

// refused marks a refusal of the cleanup (orphans.ErrRefused) terminal:
// the job is aborted with the reason, nothing deleted.
func refused(err error) error {
	if errors.Is(err, orphans.ErrRefused) && !errors.Is(err, ErrAborted) {
		return fmt.Errorf("%w: %w", ErrAborted, err)
	}
	return err
}
