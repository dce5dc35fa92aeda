package commit

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/deletefiles"
)

// input is a rewritten file as the scan-planning rules need it.
type input struct {
	path string
	seq  int64 // data sequence number
}

// appliedDeletes returns the delete files live at snap (S) that apply to at
// least one of the inputs (keys, fileKey), and the live deletion vectors
// that reference an input (the job removes those as dead). seqs are the
// inputs' data sequence numbers.
//
// The rules are the spec's scan planning, as package filescan plans the
// rewriters' tasks (a superset where that is cheaper; an extra one only
// makes a concurrent removal of it abort when it need not):
//   - a deletion vector applies to the file it references;
//   - a position delete file applies to the file it references (its
//     referenced_data_file, or equal file_path bounds) when that file's data
//     sequence number is not above its own; without a single target, to
//     the files of its spec and partition whose data sequence number is not
//     above its own and whose path its file_path bounds admit;
//   - an equality delete applies to the files whose data sequence number is
//     strictly lower, of its spec and partition, or to every file when its
//     spec is unpartitioned.
//
// Empty delete files delete nothing and are left out.
func appliedDeletes(ctx context.Context, fs icebergio.IO, meta table.Metadata, snap *table.Snapshot, inputs []iceberg.DataFile, seqs map[string]int64) (map[string]struct{}, []iceberg.DataFile, error) {
	byPath := map[string]int64{}
	byPart := map[string][]input{}
	minByPart := map[string]int64{}
	minAll := int64(math.MaxInt64)
	for _, f := range inputs {
		seq := seqs[f.FilePath()]
		byPath[f.FilePath()] = seq
		k := partitionKey(f)
		byPart[k] = append(byPart[k], input{path: f.FilePath(), seq: seq})
		if m, ok := minByPart[k]; !ok || seq < m {
			minByPart[k] = seq
		}
		minAll = min(minAll, seq)
	}
	for _, files := range byPart {
		slices.SortFunc(files, func(a, b input) int { return strings.Compare(a.path, b.path) })
	}

	applied := map[string]struct{}{}
	var dvs []iceberg.DataFile
	err := eachLiveDelete(ctx, fs, snap, func(df iceberg.DataFile, seq int64) error {
		var applies bool
		switch {
		case table.IsDeletionVector(df):
			if ref := df.ReferencedDataFile(); ref != nil {
				if _, ok := byPath[*ref]; ok {
					dvs = append(dvs, df)
					applies = true
				}
			}
		case df.ContentType() == iceberg.EntryContentPosDeletes:
			applies = positionDeleteApplies(df, seq, byPath, byPart)
		case df.ContentType() == iceberg.EntryContentEqDeletes:
			spec := meta.PartitionSpecByID(int(df.SpecID()))
			if spec == nil || spec.IsUnpartitioned() {
				applies = minAll < seq
			} else if m, ok := minByPart[partitionKey(df)]; ok {
				applies = m < seq
			}
		}
		if applies && df.Count() > 0 {
			applied[fileKey(df)] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return applied, dvs, nil
}

// positionDeleteApplies reports whether a position delete file with data
// sequence number seq applies to one of the inputs (see appliedDeletes).
func positionDeleteApplies(df iceberg.DataFile, seq int64, byPath map[string]int64, byPart map[string][]input) bool {
	if target := referencedPath(df, deletefiles.PathFieldID); target != "" {
		s, ok := byPath[target]
		return ok && s <= seq
	}
	files := byPart[partitionKey(df)]
	lower, upper, bounded := pathBounds(df, deletefiles.PathFieldID)
	start := 0
	if bounded {
		start = sort.Search(len(files), func(i int) bool { return files[i].path >= lower })
	}
	for _, f := range files[start:] {
		if bounded && f.path > upper {
			break
		}
		if f.seq <= seq {
			return true
		}
	}
	return false
}
