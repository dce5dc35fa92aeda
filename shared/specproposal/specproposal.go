// Package specproposal says when a table's partition spec is wrong for
// its queries and its data, and proposes the change: the `ALTER TABLE ...
// ADD PARTITION FIELD`, `DROP PARTITION FIELD` or `REPLACE PARTITION
// FIELD ... WITH` statement (Iceberg's Spark SQL extensions,
// https://iceberg.apache.org/docs/latest/spark-ddl/, "ALTER TABLE ... ADD
// PARTITION FIELD": a metadata change, existing data keeps its layout),
// with its expected effect.
//
// Two rules, both from recorded signals and the files' statistics:
//   - Add: most of the table's queries pick single values (eq, in) of a
//     column that is no partition source and holds few values (its
//     files' bounds show at most MaxValues distinct ones), and a lookup on
//     it opens several files per partition today: a partition field on
//     it lets those queries skip all other values' data, and the new
//     partitions keep at least half a target file each.
//   - Coarsen: many partitions, each holding a small part of one target
//     file: a time field one step coarser (hour to day, day to month,
//     month to year) or, for another transform, dropping the finest
//     field, lets compaction reach the target size.
//
// Invariants:
//   - Propose only proposes: icekeeper never changes a spec itself (a
//     spec change rewrites how every writer writes and is the owner's
//     call).
//   - Nothing is proposed on too little evidence: fewer than MinQueries
//     decayed queries for an add, fewer than MinPartitions partitions for
//     a coarsening, unknown cardinality for an add.
package specproposal

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/icekeeper/icekeeper/shared/signals"
)

// Column is what the signals and the files say about one column.
type Column struct {
	Name string
	// Queries is the decayed number of queries filtering on it,
	// PointShare the share of them with a point predicate, BytesScanned
	// what they scanned (signals.ColumnSignal).
	Queries      float64
	PointShare   float64
	BytesScanned float64
	// Values is how many distinct values any partition holds, from the
	// files' bounds (health's ColumnOverlap.Values; 0: many or unknown).
	Values int
	// LookupFiles is the files a point lookup on it opens per partition
	// today (0: unknown).
	LookupFiles float64
}

// Field is one field of the current spec.
type Field struct {
	Name      string // the partition field's name (ts_day)
	Source    string // its source column (ts)
	Transform string // identity, hour, day, month, year, bucket[16], truncate[4], void
}

// Table is what Propose needs to know.
type Table struct {
	Name   string
	Fields []Field
	// Partitions, DataBytes and DataFiles are the current snapshot's
	// (health's report), MedianPartitionBytes its partitions' median data
	// bytes, TargetFileSize the table's.
	Partitions           int
	DataBytes            int64
	DataFiles            int
	MedianPartitionBytes int64
	TargetFileSize       int64
	// Queries is the table's decayed queries, Columns the filtered
	// columns.
	Queries float64
	Columns []Column
}

// Rules tune Propose.
type Rules struct {
	MinQueries     float64
	MinFilterShare float64 // of the table's queries filtering the column
	MinPointShare  float64
	MaxValues      int
	MinLookupFiles float64
	MinPartitions  int
	// SmallShare: partitions whose median holds less than this share of
	// a target file are too small.
	SmallShare float64
}

// DefaultRules: half the queries, 80% of them point lookups, at most 32
// values, more than 2 files a lookup; 16 partitions under an eighth of a
// target file.
var DefaultRules = Rules{MinQueries: 20, MinFilterShare: 0.5, MinPointShare: 0.8, MaxValues: 32, MinLookupFiles: 2, MinPartitions: 16, SmallShare: 0.125}

// Proposal is one spec change and its expected effect.
type Proposal struct {
	// Change is "add", "replace" or "drop".
	Change string `json:"change"`
	SQL    string `json:"sql"`
	Why    string `json:"why"`
	Effect string `json:"effect"`
	// ExpectedBytesSaved estimates the decayed bytes the queries would
	// not have scanned (add); ExpectedPartitions and ExpectedFiles the
	// partitions and, compacted, files after (coarsen).
	ExpectedBytesSaved float64 `json:"expected_bytes_saved,omitempty"`
	ExpectedPartitions int     `json:"expected_partitions,omitempty"`
	ExpectedFiles      int     `json:"expected_files,omitempty"`
}

// Propose proposes the spec changes the table's signals and files call
// for (none when the spec fits).
func Propose(t Table, r Rules) []Proposal {
	var out []Proposal
	if p, ok := add(t, r); ok {
		out = append(out, p)
	}
	if p, ok := coarsen(t, r); ok {
		out = append(out, p)
	}
	return out
}

func add(t Table, r Rules) (Proposal, bool) {
	if t.Queries < r.MinQueries {
		return Proposal{}, false
	}
	cands := slices.Clone(t.Columns)
	slices.SortFunc(cands, func(a, b Column) int { return cmp.Compare(b.BytesScanned, a.BytesScanned) })
	for _, c := range cands {
		if slices.ContainsFunc(t.Fields, func(f Field) bool { return f.Source == c.Name && f.Transform != "void" }) {
			continue
		}
		if c.Queries < r.MinFilterShare*t.Queries || c.PointShare < r.MinPointShare || c.Values < 2 || c.Values > r.MaxValues || c.LookupFiles < r.MinLookupFiles {
			continue
		}
		// Each new partition should still hold half a target file.
		perPartition := t.MedianPartitionBytes / int64(c.Values)
		if t.TargetFileSize > 0 && perPartition < t.TargetFileSize/2 {
			continue
		}
		saved := c.BytesScanned * (1 - 1/float64(c.Values))
		return Proposal{
			Change: "add",
			SQL:    fmt.Sprintf("ALTER TABLE %s ADD PARTITION FIELD %s", t.Name, c.Name),
			Why: fmt.Sprintf("%.0f%% of the queries (%.1f decayed) filter %s, %.0f%% of them on single values; it holds at most %d values per partition and a lookup opens %.1f files per partition today",
				100*c.Queries/t.Queries, c.Queries, c.Name, 100*c.PointShare, c.Values, c.LookupFiles),
			Effect:             fmt.Sprintf("those queries would read about 1/%d of each partition: about %s less of the %s they scanned; new data only (existing files keep their partitions until rewritten)", c.Values, signals.HumanBytes(saved), signals.HumanBytes(c.BytesScanned)),
			ExpectedBytesSaved: saved,
		}, true
	}
	return Proposal{}, false
}

// coarser is the next coarser time transform.
var coarser = map[string]string{"hour": "day", "day": "month", "month": "year"}

func coarsen(t Table, r Rules) (Proposal, bool) {
	if len(t.Fields) == 0 || t.Partitions < r.MinPartitions || t.TargetFileSize <= 0 || float64(t.MedianPartitionBytes) >= r.SmallShare*float64(t.TargetFileSize) {
		return Proposal{}, false
	}
	why := fmt.Sprintf("%d partitions hold a median %s of data, under %.0f%% of the %s target file size, in %d files",
		t.Partitions, signals.HumanBytes(float64(t.MedianPartitionBytes)), 100*r.SmallShare, signals.HumanBytes(float64(t.TargetFileSize)), t.DataFiles)
	files := max(1, int((t.DataBytes+t.TargetFileSize-1)/t.TargetFileSize))
	// A time field one step coarser, the finest first.
	for _, tr := range []string{"hour", "day", "month"} {
		for _, f := range t.Fields {
			if f.Transform != tr {
				continue
			}
			factor := map[string]int{"hour": 24, "day": 30, "month": 12}[tr]
			parts := max(1, t.Partitions/factor)
			return Proposal{
				Change: "replace",
				SQL:    fmt.Sprintf("ALTER TABLE %s REPLACE PARTITION FIELD %s WITH %s(%s)", t.Name, f.Name, coarser[tr], f.Source),
				Why:    why,
				Effect: fmt.Sprintf("about %d partitions instead of %d (a %s holds about %d %ss), so compaction can write files near the target size: about %d files for the data instead of %d; new data only",
					parts, t.Partitions, coarser[tr], factor, tr, max(files, parts), t.DataFiles),
				ExpectedPartitions: parts,
				ExpectedFiles:      max(files, parts),
			}, true
		}
	}
	// Otherwise the last field (the finest split), when there are others
	// or the table is small enough to hold unpartitioned.
	// Spark drops a field by its name too ("DROP PARTITION FIELD shard").
	f := t.Fields[len(t.Fields)-1]
	return Proposal{
		Change:        "drop",
		SQL:           fmt.Sprintf("ALTER TABLE %s DROP PARTITION FIELD %s", t.Name, f.Name),
		Why:           why,
		Effect:        fmt.Sprintf("the data of the partitions that differ only in %s shares files: about %d files for the data instead of %d; queries filtering %s prune by the files' bounds instead (a sort on it keeps that cheap); new data only", f.Name, files, t.DataFiles, f.Source),
		ExpectedFiles: files,
	}, true
}
