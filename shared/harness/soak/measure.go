package soak

// Measuring a table: its files against the optimum, its delete files, its
// storage against its live data plus what its retention keeps, and the
// files on storage no snapshot references.

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TableSample is one table at one moment.
type TableSample struct {
	DataFiles int `json:"data_files"`
	// Optimum is the data files the live data needs: in each partition,
	// its bytes over the target file size, rounded up.
	Optimum     int   `json:"optimum"`
	DeleteFiles int   `json:"delete_files"`
	LiveBytes   int64 `json:"live_bytes"`
	// RetainedBytes are the data and delete files of the current snapshot
	// and of every snapshot younger than the retention: what storage
	// should hold.
	RetainedBytes int64 `json:"retained_bytes"`
	// ScheduledBytes add the snapshots younger than the retention plus
	// the table's expiry interval (icekeeper.expire.min-interval): what
	// storage holds at most when each expiry runs as soon as its interval
	// lets it, since a snapshot that passes the retention just after an
	// expiry waits for the next.
	ScheduledBytes int64 `json:"scheduled_bytes"`
	// StoredBytes are the files under the table's data location.
	StoredBytes int64 `json:"stored_bytes"`
	Snapshots   int   `json:"snapshots"`
}

// FileRatio is data files over the optimum.
func (s TableSample) FileRatio() float64 {
	return float64(s.DataFiles) / float64(max(s.Optimum, 1))
}

// StorageRatio is stored bytes over retained bytes.
func (s TableSample) StorageRatio() float64 {
	return float64(s.StoredBytes) / float64(max(s.RetainedBytes, 1))
}

// ScheduledStorageRatio is stored bytes over the bytes retained until the
// next expiry the table's interval allows.
func (s TableSample) ScheduledStorageRatio() float64 {
	return float64(s.StoredBytes) / float64(max(s.ScheduledBytes, 1))
}

type fileRef struct {
	path    string
	size    int64
	content iceberg.ManifestEntryContent
	part    string
}

// seenFiles remembers, for one table, the entries of the manifests read
// so far (a manifest never changes) and every file a snapshot ever
// referenced.
type seenFiles struct {
	manifests map[string][]fileRef
	ever      map[string]bool
}

// measure samples t. Every snapshot lives at least the retention, longer
// than the time between samples, so every file any snapshot ever
// referenced is in t.seen.ever.
func (f *fleet) measure(ctx context.Context, t *tableState) (TableSample, map[string]bool, error) {
	var s TableSample
	tbl, err := f.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return s, nil, err
	}
	if t.seen.manifests == nil {
		t.seen.manifests, t.seen.ever = map[string][]fileRef{}, map[string]bool{}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return s, nil, err
	}
	meta := tbl.Metadata()
	judgedAt := time.Now()
	if !f.triggersStopped.IsZero() {
		judgedAt = f.triggersStopped
	}
	cutoff := judgedAt.Add(-f.o.wall(Retention)).UnixMilli()
	scheduledCutoff := judgedAt.Add(-f.o.wall(Retention + ExpirePeriod)).UnixMilli()
	current := tbl.CurrentSnapshot()
	referenced := map[string]bool{}
	retained, scheduled := map[string]int64{}, map[string]int64{}
	used := map[string]bool{}
	snaps := meta.Snapshots()
	s.Snapshots = len(snaps)
	for i := range snaps {
		snap := &snaps[i]
		isCurrent := current != nil && snap.SnapshotID == current.SnapshotID
		keep := isCurrent || snap.TimestampMs >= cutoff
		keepScheduled := isCurrent || snap.TimestampMs >= scheduledCutoff
		mfs, err := snap.Manifests(fsys)
		if err != nil {
			return s, nil, fmt.Errorf("soak: manifests of %s: %w", t.Name, err)
		}
		partBytes := map[string]int64{}
		for _, mf := range mfs {
			used[mf.FilePath()] = true
			refs, ok := t.seen.manifests[mf.FilePath()]
			if !ok {
				entries, err := mf.FetchEntries(fsys, true)
				if err != nil {
					return s, nil, fmt.Errorf("soak: manifest of %s: %w", t.Name, err)
				}
				for _, e := range entries {
					df := e.DataFile()
					refs = append(refs, fileRef{path: df.FilePath(), size: df.FileSizeBytes(), content: df.ContentType(), part: partKey(mf.PartitionSpecID(), df.Partition())})
				}
				t.seen.manifests[mf.FilePath()] = refs
			}
			for _, r := range refs {
				referenced[r.path] = true
				t.seen.ever[r.path] = true
				if keep {
					retained[r.path] = r.size
				}
				if keepScheduled {
					scheduled[r.path] = r.size
				}
				if !isCurrent {
					continue
				}
				if r.content == iceberg.EntryContentData {
					s.DataFiles++
					s.LiveBytes += r.size
					partBytes[r.part] += r.size
				} else {
					s.DeleteFiles++
				}
			}
		}
		for _, b := range partBytes {
			s.Optimum += int(math.Ceil(float64(b) / TargetFileSize))
		}
	}
	for m := range t.seen.manifests {
		if !used[m] {
			delete(t.seen.manifests, m)
		}
	}
	for _, b := range retained {
		s.RetainedBytes += b
	}
	for _, b := range scheduled {
		s.ScheduledBytes += b
	}
	stored, err := filesUnder(tbl)
	if err != nil {
		return s, nil, err
	}
	for _, size := range stored {
		s.StoredBytes += size
	}
	unreferenced := map[string]bool{}
	for p := range stored {
		if !referenced[p] {
			unreferenced[p] = true
		}
	}
	return s, unreferenced, nil
}

// partKey names a partition.
func partKey(spec int32, part map[int]any) string {
	keys := make([]int, 0, len(part))
	for k := range part {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d", spec)
	for _, k := range keys {
		fmt.Fprintf(&b, "/%d=%v", k, part[k])
	}
	return b.String()
}

// filesUnder lists the files under the table's data location (the
// warehouse is on local disk), by their file:// path.
func filesUnder(tbl *table.Table) (map[string]int64, error) {
	root := strings.TrimPrefix(tbl.Location(), "file://") + "/data"
	out := map[string]int64{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out["file://"+p] = info.Size()
		return nil
	})
	return out, err
}
