package tests

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/binpack"
	"github.com/icekeeper/icekeeper/shared/filescan"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// scanPlanningDiffers compares the planner's scan planning (package
// filescan) with iceberg-go's Scan.PlanFiles at the table's current
// snapshot, and says how they differ ("" when they do not):
//   - the same data files, in the same order, with the same record counts,
//     sizes, specs, partitions, data sequence numbers and first row ids;
//   - the same position delete files and deletion vectors on each;
//   - the equality deletes the spec's rule gives (strictly newer, same spec
//     and partition, or an unpartitioned spec), checked against the live
//     delete files directly; they include every one PlanFiles attaches
//     (which also prunes by column statistics);
//   - with filescan.Options.EqualityColumnSizes (every other snapshot, so
//     both readers are compared), a data file keeps exactly the column
//     sizes of its equality deletes' columns, as PlanFiles' file has them;
//     without it, none;
//   - each task encodes and decodes to the same files, deletes and sizes.
//
// The differential harness runs it after every operation and job, on its
// evolved v2 and v3 tables.
func scanPlanningDiffers(ctx context.Context, tbl *table.Table) (string, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return "", nil
	}
	theirs, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(ctx)
	if err != nil {
		return "", fmt.Errorf("PlanFiles: %w", err)
	}
	theirs = binpack.WholeFiles(theirs)
	fs, err := tbl.FS(ctx)
	if err != nil {
		return "", err
	}
	withSizes := snap.SequenceNumber%2 == 0
	ours, err := filescan.Plan(ctx, tbl.Metadata(), snap, fs, filescan.Options{Concurrency: 3, EqualityColumnSizes: withSizes})
	if err != nil {
		return "", fmt.Errorf("filescan.Plan: %w", err)
	}
	paths := func(ts []table.FileScanTask) []string {
		out := make([]string, len(ts))
		for i, t := range ts {
			out[i] = t.File.FilePath()
		}
		return out
	}
	if !slices.Equal(paths(theirs), paths(ours)) {
		return fmt.Sprintf("data files differ:\n  PlanFiles %v\n  filescan  %v", paths(theirs), paths(ours)), nil
	}
	eqs, err := liveEqualityDeletes(ctx, tbl, snap)
	if err != nil {
		return "", err
	}
	keys := func(ds []iceberg.DataFile) []string {
		out := make([]string, len(ds))
		for i, d := range ds {
			out[i] = messages.DeleteFileKey(d)
		}
		slices.Sort(out)
		return out
	}
	seq := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	for i, o := range ours {
		t := theirs[i]
		f, tf := o.File, t.File
		what := f.FilePath()
		if f.Count() != tf.Count() || f.FileSizeBytes() != tf.FileSizeBytes() || f.SpecID() != tf.SpecID() || messages.PartitionKey(f) != messages.PartitionKey(tf) || f.FileFormat() != tf.FileFormat() {
			return fmt.Sprintf("%s: file differs: rows %d/%d, bytes %d/%d, spec %d/%d, partition %s/%s", what, f.Count(), tf.Count(), f.FileSizeBytes(), tf.FileSizeBytes(), f.SpecID(), tf.SpecID(), messages.PartitionKey(f), messages.PartitionKey(tf)), nil
		}
		if seq(o.DataSequenceNumber) != seq(t.DataSequenceNumber) || seq(o.FirstRowID) != seq(t.FirstRowID) || o.Start != 0 || o.Length != tf.FileSizeBytes() {
			return fmt.Sprintf("%s: task differs: data sequence number %d/%d, first row id %d/%d, range %d+%d", what, seq(o.DataSequenceNumber), seq(t.DataSequenceNumber), seq(o.FirstRowID), seq(t.FirstRowID), o.Start, o.Length), nil
		}
		if a, b := keys(o.DeleteFiles), keys(t.DeleteFiles); !slices.Equal(a, b) {
			return fmt.Sprintf("%s: position deletes differ:\n  PlanFiles %v\n  filescan  %v", what, b, a), nil
		}
		if a, b := keys(o.DeletionVectorFiles), keys(t.DeletionVectorFiles); !slices.Equal(a, b) {
			return fmt.Sprintf("%s: deletion vectors differ:\n  PlanFiles %v\n  filescan  %v", what, b, a), nil
		}
		var want []iceberg.DataFile
		for _, e := range eqs {
			global := tbl.Metadata().PartitionSpecByID(int(e.DataFile().SpecID())).IsUnpartitioned()
			same := e.DataFile().SpecID() == tf.SpecID() && len(tf.Partition()) > 0 && messages.PartitionKey(e.DataFile()) == messages.PartitionKey(tf)
			if e.SequenceNum() > seq(t.DataSequenceNumber) && (global || same) {
				want = append(want, e.DataFile())
			}
		}
		got := keys(o.EqualityDeleteFiles)
		if !slices.Equal(got, keys(want)) {
			return fmt.Sprintf("%s: equality deletes are not the spec's:\n  spec     %v\n  filescan %v", what, keys(want), got), nil
		}
		for _, k := range keys(t.EqualityDeleteFiles) {
			if !slices.Contains(got, k) {
				return fmt.Sprintf("%s: PlanFiles applies equality delete %s, filescan does not", what, k), nil
			}
		}
		wantSizes := map[int]int64{}
		for _, d := range o.EqualityDeleteFiles {
			for _, id := range d.EqualityFieldIDs() {
				if n, ok := tf.ColumnSizes()[id]; ok && withSizes {
					wantSizes[id] = n
				}
			}
		}
		if !maps.Equal(f.ColumnSizes(), wantSizes) {
			return fmt.Sprintf("%s: column sizes differ (equality column sizes kept: %v):\n  PlanFiles %v\n  filescan  %v", what, withSizes, wantSizes, f.ColumnSizes()), nil
		}
		enc, err := messages.EncodeScanTasks(tbl.Metadata(), []table.FileScanTask{o})
		if err != nil {
			return fmt.Sprintf("%s: does not encode: %v", what, err), nil
		}
		dec, err := messages.DecodeScanTasks(tbl.Metadata(), int(f.SpecID()), enc)
		if err != nil || len(dec) != 1 {
			return fmt.Sprintf("%s: does not decode: %v", what, err), nil
		}
		d := dec[0]
		if d.File.FilePath() != what || d.File.Count() != f.Count() || messages.PartitionKey(d.File) != messages.PartitionKey(tf) || seq(d.DataSequenceNumber) != seq(t.DataSequenceNumber) ||
			!slices.Equal(keys(d.DeleteFiles), keys(o.DeleteFiles)) || !slices.Equal(keys(d.DeletionVectorFiles), keys(o.DeletionVectorFiles)) || !slices.Equal(keys(d.EqualityDeleteFiles), got) ||
			!maps.Equal(d.File.ColumnSizes(), f.ColumnSizes()) {
			return fmt.Sprintf("%s: decodes differently: %s rows %d partition %s seq %d, %d/%d/%d deletes", what, d.File.FilePath(), d.File.Count(), messages.PartitionKey(d.File), seq(d.DataSequenceNumber), len(d.DeleteFiles), len(d.DeletionVectorFiles), len(d.EqualityDeleteFiles)), nil
		}
		for _, pair := range [][2][]iceberg.DataFile{{d.EqualityDeleteFiles, o.EqualityDeleteFiles}, {d.DeletionVectorFiles, o.DeletionVectorFiles}} {
			for j := range pair[0] {
				if a, b := pair[0][j], pair[1][j]; !slices.Equal(a.EqualityFieldIDs(), b.EqualityFieldIDs()) || referenced(a) != referenced(b) || seq(a.ContentOffset()) != seq(b.ContentOffset()) {
					return fmt.Sprintf("%s: delete %s decodes with other equality ids or reference", what, b.FilePath()), nil
				}
			}
		}
	}
	return "", nil
}

// liveEqualityDeletes are the live equality delete entries of snap.
func liveEqualityDeletes(ctx context.Context, tbl *table.Table, snap *table.Snapshot) ([]iceberg.ManifestEntry, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, err
	}
	var out []iceberg.ManifestEntry
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.DataFile().ContentType() == iceberg.EntryContentEqDeletes && e.DataFile().Count() > 0 {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

func referenced(d iceberg.DataFile) string {
	if r := d.ReferencedDataFile(); r != nil {
		return *r
	}
	return ""
}
