package health

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Reached says which partitions icekeeper's compactions rewrote since a
// layout change at since (a layout on trial, package layouttrial): per
// partition, named as the report names them, when the first of its data
// files written by an icekeeper job (a snapshot with the job's summary
// property that replaced files) since then was committed. During the
// trial no other partition is compacted (package plan holds the
// rollout), so these are the partitions in the new layout.
func Reached(ctx context.Context, tbl *table.Table, since time.Time) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	name := PartitionNamer(tbl.Metadata())
	ourRewrite := func(s table.Snapshot) bool {
		return s.TimestampMs >= since.UnixMilli() && ours(s) && s.Summary.Operation == table.OpReplace
	}
	err := eachEntryAdded(ctx, tbl, ourRewrite, func(e iceberg.ManifestEntry, at time.Time) {
		if e.Status() != iceberg.EntryStatusADDED || e.DataFile().ContentType() != iceberg.EntryContentData {
			return
		}
		n := name(e.DataFile())
		if t, ok := out[n]; !ok || at.Before(t) {
			out[n] = at
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachEntryAdded calls fn with each entry, and its snapshot's time, that a
// snapshot keep chose wrote in the manifests it wrote itself (its added
// and deleted entries; a manifest an earlier snapshot wrote is skipped).
func eachEntryAdded(ctx context.Context, tbl *table.Table, keep func(table.Snapshot) bool, fn func(e iceberg.ManifestEntry, at time.Time)) error {
	var fs icebergio.IO
	for _, s := range tbl.Metadata().Snapshots() {
		if !keep(s) {
			continue
		}
		if fs == nil {
			var err error
			if fs, err = tbl.FS(ctx); err != nil {
				return fmt.Errorf("health: open table IO: %w", err)
			}
		}
		manifests, err := s.Manifests(fs)
		if err != nil {
			return fmt.Errorf("health: manifests of snapshot %d: %w", s.SnapshotID, err)
		}
		at := time.UnixMilli(s.TimestampMs).UTC()
		for _, m := range manifests {
			if m.SnapshotID() != s.SnapshotID {
				continue // written by an earlier snapshot
			}
			for e, err := range m.Entries(fs, false) {
				if err != nil {
					return fmt.Errorf("health: read manifest %s: %w", m.FilePath(), err)
				}
				if e.SnapshotID() == s.SnapshotID {
					fn(e, at)
				}
			}
		}
	}
	return nil
}
