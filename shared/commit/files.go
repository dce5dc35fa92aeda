package commit

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/messages"
)

// underAny reports whether path lies under one of the roots.
func underAny(path string, roots []string) bool {
	for _, r := range roots {
		if strings.HasPrefix(path, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// fileKey identifies a content file within the table: its path, and for a
// deletion vector its offset in the Puffin file (several DVs share one).
func fileKey(df iceberg.DataFile) string { return messages.DeleteFileKey(df) }

// liveFiles returns the live data files of snap whose paths are in paths,
// the partitions they are in, and their data sequence numbers by path.
func liveFiles(ctx context.Context, fs icebergio.IO, tbl *table.Table, snap *table.Snapshot, paths map[string]struct{}) ([]iceberg.DataFile, map[string]struct{}, map[string]int64, error) {
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read manifests of snapshot %d: %w", snap.SnapshotID, err)
	}
	var out []iceberg.DataFile
	parts := map[string]struct{}{}
	seqs := map[string]int64{}
	for _, m := range manifests {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, nil, nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			if _, ok := paths[e.DataFile().FilePath()]; ok {
				out = append(out, e.DataFile())
				parts[partitionKey(e.DataFile())] = struct{}{}
				seqs[e.DataFile().FilePath()] = e.SequenceNum()
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FilePath() < out[j].FilePath() })
	return out, parts, seqs, nil
}

func referencedPath(df iceberg.DataFile, pathField int) string {
	if ref := df.ReferencedDataFile(); ref != nil && *ref != "" {
		return *ref
	}
	if lower, upper, ok := pathBounds(df, pathField); ok && lower == upper {
		return lower
	}
	return ""
}

func pathBounds(df iceberg.DataFile, pathField int) (string, string, bool) {
	lo, hi := df.LowerBoundValues()[pathField], df.UpperBoundValues()[pathField]
	if len(lo) == 0 || len(hi) == 0 {
		return "", "", false
	}
	return string(lo), string(hi), true
}

func partitionKey(df iceberg.DataFile) string { return messages.PartitionKey(df) }

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// eachLiveDelete calls f with every live delete file of snap (position
// deletes, deletion vectors, equality deletes) and its data sequence
// number, manifest by manifest; it stops at f's first error.
func eachLiveDelete(ctx context.Context, fs icebergio.IO, snap *table.Snapshot, f func(df iceberg.DataFile, seq int64) error) error {
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return fmt.Errorf("read manifests of snapshot %d: %w", snap.SnapshotID, err)
	}
	for _, m := range manifests {
		if err := ctx.Err(); err != nil {
			return err
		}
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			if err := f(e.DataFile(), e.SequenceNum()); err != nil {
				return err
			}
		}
	}
	return nil
}
