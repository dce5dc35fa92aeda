package expire

import (
	"context"
	"errors"
	"fmt"
	"slices"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/metadatafile"
	"github.com/icekeeper/icekeeper/shared/storagepath"
)

// ErrUnverifiable: what an expiry's commit did cannot be checked (a
// metadata file of the table's log between the expiry's commit and now is
// gone or unreadable), so none of the files it freed may be deleted. Not
// retryable.
var ErrUnverifiable = errors.New("expire: the expiry's commit cannot be checked against the metadata it was applied to")

// Applied is the metadata a catalog applied an expiry to (Before, the
// catalog's metadata right before the commit) and the metadata the commit
// made (After).
type Applied struct {
	Before, After                 table.Metadata
	BeforeLocation, AfterLocation string
}

// FindApplied finds, in the metadata log of cur (at curLocation), the
// metadata an expiry removing expired was applied to: walking from the
// newest metadata file back, the first that still has one of the expired
// snapshots (nobody adds an expired snapshot back) is Before, the one
// after it After. It reads the log's files until it finds them;
// ErrUnverifiable when one of them cannot be read or the log no longer
// reaches back that far. cur must not have any of the expired snapshots.
func FindApplied(fsys icebergio.IO, cur table.Metadata, curLocation string, expired []int64) (Applied, error) {
	has := func(m table.Metadata) bool {
		for _, id := range expired {
			if m.SnapshotByID(id) != nil {
				return true
			}
		}
		return false
	}
	if has(cur) {
		return Applied{}, fmt.Errorf("expire: the table still has expired snapshots: the expiry did not land")
	}
	log := slices.Collect(cur.PreviousFiles())
	after, afterLoc := cur, curLocation
	for i := len(log) - 1; i >= 0; i-- {
		loc := log[i].MetadataFile
		m, err := metadatafile.Read(fsys, loc)
		if err != nil {
			return Applied{}, fmt.Errorf("%w: read %s: %w", ErrUnverifiable, loc, err)
		}
		if has(m) {
			return Applied{Before: m, After: after, BeforeLocation: loc, AfterLocation: afterLoc}, nil
		}
		after, afterLoc = m, loc
	}
	return Applied{}, fmt.Errorf("%w: no metadata file left in the table's log (%d entries) has the expired snapshots", ErrUnverifiable, len(log))
}

// DroppedRef is a ref the catalog dropped while applying an expiry that
// did not decide to remove it.
type DroppedRef struct {
	Name       string `json:"name"`
	SnapshotID int64  `json:"snapshot_id,string"`
}

// Dropped lists the refs that a.Before had and a.After lost, other than
// removed (the refs the expiry decided to remove), sorted by name: refs
// another writer created or moved onto a snapshot the expiry removed,
// between the expiry's selection and its commit.
func Dropped(a Applied, removed []string) []DroppedRef {
	after := maps(a.After)
	var out []DroppedRef
	for name, ref := range a.Before.Refs() {
		if _, ok := after[name]; ok || slices.Contains(removed, name) {
			continue
		}
		out = append(out, DroppedRef{Name: name, SnapshotID: ref.SnapshotID})
	}
	slices.SortFunc(out, func(x, y DroppedRef) int {
		switch {
		case x.Name < y.Name:
			return -1
		case x.Name > y.Name:
			return 1
		}
		return 0
	})
	return out
}

// Keep returns files less every file the snapshots of meta with the given
// ids reference (manifest lists, manifests, the files their live entries
// name, statistics files): what may still go when those snapshots must be
// kept readable. An id meta does not have is an error.
func Keep(ctx context.Context, fsys icebergio.IO, meta table.Metadata, ids []int64, files []File) ([]File, error) {
	var snaps []table.Snapshot
	for _, id := range ids {
		s := meta.SnapshotByID(id)
		if s == nil {
			return nil, fmt.Errorf("expire: keep snapshot %d: not in the metadata", id)
		}
		snaps = append(snaps, *s)
	}
	set := byKey(files)
	if err := dropReferenced(ctx, fsys, meta, snaps, set); err != nil {
		return nil, err
	}
	return inSet(files, set), nil
}

// dropReferenced removes from set every file snaps reference, and the
// statistics files meta lists for them.
func dropReferenced(ctx context.Context, fsys icebergio.IO, meta table.Metadata, snaps []table.Snapshot, set map[string]File) error {
	if len(snaps) == 0 {
		return nil
	}
	ms, err := manifestsOf(ctx, fsys, snaps)
	if err != nil {
		return err
	}
	ids := map[int64]bool{}
	for _, s := range snaps {
		ids[s.SnapshotID] = true
		delete(set, storagepath.Key(s.ManifestList))
	}
	for p := range ms {
		delete(set, storagepath.Key(p))
	}
	for sf := range meta.Statistics() {
		if ids[sf.SnapshotID] {
			delete(set, storagepath.Key(sf.StatisticsPath))
		}
	}
	for psf := range meta.PartitionStatistics() {
		if ids[psf.SnapshotID] {
			delete(set, storagepath.Key(psf.StatisticsPath))
		}
	}
	return dropLive(ctx, fsys, ms, set)
}

// byKey is files by storagepath.Key.
func byKey(files []File) map[string]File {
	set := make(map[string]File, len(files))
	for _, f := range files {
		set[storagepath.Key(f.Path)] = f
	}
	return set
}

// inSet keeps, in order, the files whose key is still in set.
func inSet(files []File, set map[string]File) []File {
	out := make([]File, 0, len(set))
	for _, f := range files {
		if _, ok := set[storagepath.Key(f.Path)]; ok {
			out = append(out, f)
		}
	}
	return out
}
