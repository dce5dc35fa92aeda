package health

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Stats describe the live files of one snapshot.
type Stats struct {
	SnapshotID          int64 `json:"snapshot_id,string"`
	DataFiles           int   `json:"data_files"`
	DataBytes           int64 `json:"data_bytes"`
	DataRecords         int64 `json:"data_records"`
	PositionDeleteFiles int   `json:"position_delete_files"`
	DeletionVectors     int   `json:"deletion_vectors"`
	EqualityDeleteFiles int   `json:"equality_delete_files"`
	Snapshots           int   `json:"snapshots"`
}

// DeleteFiles is the number of delete files of every kind.
func (s Stats) DeleteFiles() int {
	return s.PositionDeleteFiles + s.DeletionVectors + s.EqualityDeleteFiles
}

// AvgFileBytes is the average data file size.
func (s Stats) AvgFileBytes() int64 {
	if s.DataFiles == 0 {
		return 0
	}
	return s.DataBytes / int64(s.DataFiles)
}

// Measure reads the current snapshot's manifests.
func Measure(ctx context.Context, tbl *table.Table) (Stats, error) {
	st := Stats{Snapshots: len(tbl.Metadata().Snapshots())}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return st, nil
	}
	st.SnapshotID = snap.SnapshotID
	fs, err := tbl.FS(ctx)
	if err != nil {
		return st, fmt.Errorf("health: open table IO: %w", err)
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return st, fmt.Errorf("health: read manifests: %w", err)
	}
	for _, m := range manifests {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("health: measure: %w", err)
		}
		// Kinds, counts and sizes only: the projected reader skips the
		// column statistics, most of what a manifest entry decodes to.
		for e, err := range iceberg.EntriesWithProjection(fs, m, true, iceberg.ManifestEntryProjection{}) {
			if err != nil {
				return st, fmt.Errorf("health: read manifest %s: %w", m.FilePath(), err)
			}
			df := e.DataFile()
			switch df.ContentType() {
			case iceberg.EntryContentData:
				st.DataFiles++
				st.DataBytes += df.FileSizeBytes()
				st.DataRecords += df.Count()
			case iceberg.EntryContentEqDeletes:
				st.EqualityDeleteFiles++
			case iceberg.EntryContentPosDeletes:
				if table.IsDeletionVector(df) {
					st.DeletionVectors++
				} else {
					st.PositionDeleteFiles++
				}
			}
		}
	}
	return st, nil
}
