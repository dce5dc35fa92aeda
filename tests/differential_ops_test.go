package tests

// The operations of the differential harness (see differential_test.go):
// every change a writer or another tool can make to the table, applied to
// the real Iceberg table through iceberg-go's transaction APIs and, in the
// same step, to the model. Each operation returns a one-line description
// for the history, or errSkip when the table offers it nothing to act on.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/shared/binpack"
)

// errSkip: the operation had nothing to act on (no live row, no dangling
// delete file, no column it may drop, ...). Nothing was changed.
var errSkip = errors.New("nothing to act on")

// Field ids of the initial schema. The id column is never renamed,
// dropped or promoted; cat and id are the only partition sources (so no
// partition source is ever dropped or promoted).
const (
	fidID   = 1
	fidCat  = 2
	fidInfo = 8
)

// cats are the values of the cat column: few, so partitions have several
// files; long enough for truncate[2] to differ from identity.
var cats = []string{"alpha", "beta", "gamma"}

// initialSchema: id long, plus a column of each primitive kind Iceberg can
// promote or not, and a struct.
func initialSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{fidID},
		iceberg.NestedField{ID: fidID, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: fidCat, Name: "cat", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "ratio", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "price", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 6, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 7, Name: "note", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: fidInfo, Name: "info", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 9, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 10, Name: "b", Type: iceberg.PrimitiveTypes.String},
		}}},
	)
}

// world is one randomized history: the table, the model of its rows and
// the seeded source of every choice.
type world struct {
	t       *testing.T
	e       *env
	ctx     context.Context
	rng     *rand.Rand
	version int
	tbl     *table.Table
	m       *model
	nextID  int64
	names   int // counter for fresh column names
	// placed: the rows' placement (mrow.specID, file) is up to date; an
	// operation that moves rows, and every pipeline stage, clears it.
	placed  bool
	history []string
	// targetSize is write.target-file-size-bytes: small appends stay well
	// below 75% of it (candidates), big appends above 180% (left out).
	targetSize int64
}

const diffTargetSize = 16 << 10

// newWorld creates the table: format v2 or v3, merge-on-read, created
// unpartitioned (spec 0 is the unpartitioned spec that global equality
// deletes are written with) and then partitioned by identity(cat) or
// bucket[4](id). version 0 lets the seed choose the format version.
func newWorld(t *testing.T, e *env, seed uint64, version int) *world {
	t.Helper()
	w := &world{t: t, e: e, ctx: e.ctx, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), m: newModel(), targetSize: diffTargetSize}
	w.version = 2 + w.rng.IntN(2)
	if version != 0 {
		w.version = version
	}
	if err := e.cat.CreateNamespace(w.ctx, catalog.NamespaceFromIdent(e.ident), nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		t.Fatalf("create namespace: %v", err)
	}
	props := iceberg.Properties{
		"format-version":                  strconv.Itoa(w.version),
		table.WriteDeleteModeKey:          table.WriteModeMergeOnRead,
		"write.update.mode":               table.WriteModeMergeOnRead,
		"write.merge.mode":                table.WriteModeMergeOnRead,
		"write.parquet.compression-codec": "zstd",
		table.WriteTargetFileSizeBytesKey: strconv.FormatInt(w.targetSize, 10),
	}
	tbl, err := e.cat.CreateTable(w.ctx, e.ident, initialSchema(), catalog.WithProperties(props))
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	w.tbl = tbl
	if spec := tbl.Spec(); !spec.IsUnpartitioned() || spec.ID() != 0 {
		t.Fatalf("new table's spec %v, want the unpartitioned spec 0", spec)
	}
	for _, f := range []int{fidID, fidCat, fidInfo} {
		if _, ok := tbl.Schema().FindFieldByID(f); !ok {
			t.Fatalf("field id %d not in the created schema %s", f, tbl.Schema())
		}
	}
	first := "identity(cat)"
	err = w.commit(func(txn *table.Transaction) error {
		us := txn.UpdateSpec(true)
		if w.rng.IntN(2) == 0 {
			us.AddIdentity("cat")
		} else {
			first = "bucket[4](id)"
			us.AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "")
		}
		return us.Commit()
	})
	if err != nil {
		t.Fatalf("partition the table: %v", err)
	}
	w.note("create v%d table, target file size %d, partitioned by %s", w.version, w.targetSize, first)
	return w
}

func (w *world) note(format string, args ...any) {
	w.history = append(w.history, fmt.Sprintf(format, args...))
}

// commit runs f in a transaction on the current table and commits it.
func (w *world) commit(f func(*table.Transaction) error) error {
	txn := w.tbl.NewTransaction()
	if err := f(txn); err != nil {
		return err
	}
	tbl, err := txn.Commit(w.ctx)
	if err != nil {
		return err
	}
	w.tbl = tbl
	return nil
}

// reload reads the table through the catalog (after the pipeline
// committed, or to see its current state).
func (w *world) reload() {
	w.t.Helper()
	tbl, err := w.e.cat.LoadTable(w.ctx, w.e.ident)
	if err != nil {
		w.t.Fatalf("load table: %v", err)
	}
	w.tbl = tbl
}

// relearnPlacement records which data file (and spec) holds each live row.
func (w *world) relearnPlacement() error {
	w.placed = false
	return w.ensurePlacement()
}

// ensurePlacement relearns the placement if it may be stale.
func (w *world) ensurePlacement() error {
	if w.placed {
		return nil
	}
	p, err := readPlacement(w.ctx, w.tbl, w.idName())
	if err != nil {
		return err
	}
	for id, r := range w.m.rows {
		if at, ok := p[id]; ok {
			r.specID, r.file = at.specID, at.file
		} else {
			r.specID, r.file = -1, ""
		}
	}
	w.placed = true
	return nil
}

func (w *world) idName() string {
	name, _ := w.tbl.Schema().FindColumnName(fidID)
	return name
}

func (w *world) colName(fieldID int) string {
	name, ok := w.tbl.Schema().FindColumnName(fieldID)
	if !ok {
		w.t.Fatalf("field id %d not in schema %s", fieldID, w.tbl.Schema())
	}
	return name
}

// ---- values ----

// randomValue draws a value for a field of type t, as the model stores it
// (see mrow.vals); optional fields are null one time in eight.
func (w *world) randomValue(t iceberg.Type, required bool) any {
	if !required && w.rng.IntN(8) == 0 {
		return nil
	}
	switch tt := t.(type) {
	case iceberg.Int32Type:
		return int32(w.rng.IntN(2000) - 1000)
	case iceberg.Int64Type:
		return w.rng.Int64N(1<<40) - 1<<39
	case iceberg.Float32Type:
		return float32(w.rng.IntN(100000)-50000) / 8 // exact in float32
	case iceberg.Float64Type:
		return float64(w.rng.IntN(1000000)-500000) / 64
	case iceberg.DecimalType:
		limit := int64(1)
		for range min(tt.Precision(), 9) - 1 {
			limit *= 10
		}
		return w.rng.Int64N(2*limit) - limit
	case iceberg.StringType:
		return fmt.Sprintf("s%x", w.rng.Uint32())
	}
	w.t.Fatalf("randomValue: unsupported type %s", t)
	return nil
}

// newRow draws a row with a fresh id for the current schema. cat is one of
// cats (or null); payload adds that many incompressible bytes to note (for
// files too large to be compacted).
func (w *world) newRow(cat any, payload int) *mrow {
	r := &mrow{vals: map[int]any{}, specID: -1}
	id := w.nextID
	w.nextID++
	var fill func(fields []iceberg.NestedField)
	fill = func(fields []iceberg.NestedField) {
		for _, f := range fields {
			if st, ok := f.Type.(*iceberg.StructType); ok {
				r.vals[f.ID] = true
				fill(st.FieldList)
				continue
			}
			r.vals[f.ID] = w.randomValue(f.Type, f.Required)
		}
	}
	fill(w.tbl.Schema().Fields())
	r.vals[fidID] = id
	r.vals[fidCat] = cat
	if payload > 0 {
		if name, ok := w.tbl.Schema().FindColumnName(7); ok && name != "" {
			b := make([]byte, payload)
			for i := range b {
				b[i] = byte(33 + w.rng.IntN(94))
			}
			r.vals[7] = string(b)
		}
	}
	return r
}

func (w *world) randomCat() any {
	if w.rng.IntN(12) == 0 {
		return nil
	}
	return cats[w.rng.IntN(len(cats))]
}

// pickLive returns up to n distinct live ids, in a random order. With
// sameFile, they all come from one data file (a position delete then
// targets one file, possibly one a job is rewriting).
func (w *world) pickLive(n int, sameFile bool) []int64 {
	return w.pickLiveFrom(w.m.ids(), n, sameFile)
}

// pickPositionDeletable is pickLive among the rows a position delete can
// target correctly. On v2 tables that is only rows in files of the current
// spec: iceberg-go v0.7.0's merge-on-read delete writes the position delete
// file with the current spec and a null partition whatever the target's
// spec, so a delete of a row in a file of an older spec does not apply
// (the model would rightly disagree, and the harness would be testing
// iceberg-go). Deletion vectors name their data file and are not limited.
func (w *world) pickPositionDeletable(n int, sameFile bool) []int64 {
	if w.version >= 3 {
		return w.pickLive(n, sameFile)
	}
	if err := w.ensurePlacement(); err != nil {
		w.t.Fatalf("placement: %v", err)
	}
	var ids []int64
	for _, id := range w.m.ids() {
		if w.m.rows[id].specID == w.tbl.Metadata().DefaultPartitionSpec() {
			ids = append(ids, id)
		}
	}
	return w.pickLiveFrom(ids, n, sameFile)
}

func (w *world) pickLiveFrom(ids []int64, n int, sameFile bool) []int64 {
	if len(ids) == 0 {
		return nil
	}
	if sameFile {
		if err := w.ensurePlacement(); err != nil {
			w.t.Fatalf("placement: %v", err)
		}
		file := w.m.rows[ids[w.rng.IntN(len(ids))]].file
		var in []int64
		for _, id := range ids {
			if w.m.rows[id].file == file {
				in = append(in, id)
			}
		}
		ids = in
	}
	w.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids[:min(n, len(ids))]
}

// records makes a one-batch record iterator over the given model rows
// rendered at schema sc.
func records(sc *iceberg.Schema, ids []int64, rows map[int64]*mrow) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	rec, err := render(sc, ids, rows)
	if err != nil {
		return nil, nil, err
	}
	return rec.Schema(), func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }, nil
}

// ---- data operations ----

// opAppend appends rows: small files in a few partitions (candidates for
// compaction), or with big, one file per cat well above 180% of the target
// file size (left out by the planner, but still subject to deletes).
func (w *world) opAppend(big bool) (string, error) {
	var rows []*mrow
	if big {
		cat := cats[w.rng.IntN(len(cats))]
		for range 90 { // large enough even when spread over 4 buckets
			rows = append(rows, w.newRow(cat, 2000))
		}
	} else {
		for range 6 + w.rng.IntN(20) {
			rows = append(rows, w.newRow(w.randomCat(), 0))
		}
	}
	staged := map[int64]*mrow{}
	var ids []int64
	for _, r := range rows {
		id := r.vals[fidID].(int64)
		staged[id] = r
		ids = append(ids, id)
	}
	rdr, err := renderReader(w.tbl.Schema(), ids, staged)
	if err != nil {
		return "", err
	}
	defer rdr.Release()
	tbl, err := w.tbl.Append(w.ctx, rdr, nil)
	if err != nil {
		return "", fmt.Errorf("append: %w", err)
	}
	w.tbl = tbl
	for id, r := range staged {
		w.m.rows[id] = r
	}
	kind := "append"
	if big {
		kind = "big append"
	}
	w.placed = false
	return fmt.Sprintf("%s of %d rows (ids %d..%d)", kind, len(ids), ids[0], ids[len(ids)-1]), nil
}

// opOverwrite replaces a few rows with new versions (same id, new values
// at the current schema), as a merge-on-read update does: one transaction
// deletes them (position deletes or deletion vectors) and appends the new
// versions. (iceberg-go's copy-on-write Transaction.Overwrite is not used:
// in v0.7.0 it rewrites a file without applying the file's position
// deletes and deletion vectors, resurrecting deleted rows.)
func (w *world) opOverwrite() (string, error) {
	ids := w.pickPositionDeletable(1+w.rng.IntN(3), w.rng.IntN(2) == 0)
	if len(ids) == 0 {
		return "", errSkip
	}
	staged := map[int64]*mrow{}
	for _, id := range ids {
		r := w.newRow(w.randomCat(), 0)
		w.nextID-- // the new version keeps the old id
		r.vals[fidID] = id
		staged[id] = r
	}
	rdr, err := renderReader(w.tbl.Schema(), ids, staged)
	if err != nil {
		return "", err
	}
	defer rdr.Release()
	err = w.commit(func(txn *table.Transaction) error {
		if err := txn.Delete(w.ctx, iceberg.IsIn(iceberg.Reference(w.idName()), ids...), nil); err != nil {
			return err
		}
		return txn.Append(w.ctx, rdr, nil)
	})
	if err != nil {
		return "", fmt.Errorf("overwrite: %w", err)
	}
	for id, r := range staged {
		w.m.rows[id] = r
	}
	w.placed = false
	return fmt.Sprintf("overwrite ids %v", ids), nil
}

// opPositionDelete deletes rows with a merge-on-read delete: position
// delete files on v2, deletion vectors on v3.
func (w *world) opPositionDelete() (string, error) {
	ids := w.pickPositionDeletable(1+w.rng.IntN(4), w.rng.IntN(3) > 0)
	if len(ids) == 0 {
		return "", errSkip
	}
	tbl, err := w.tbl.Delete(w.ctx, iceberg.IsIn(iceberg.Reference(w.idName()), ids...), nil)
	if err != nil {
		return "", fmt.Errorf("position delete: %w", err)
	}
	w.tbl = tbl
	for _, id := range ids {
		delete(w.m.rows, id)
	}
	kind := "position delete"
	if w.version >= 3 {
		kind = "deletion vector"
	}
	w.placed = false // a delete may drop a whole file
	return fmt.Sprintf("%s of ids %v", kind, ids), nil
}

// opEqualityDelete writes an equality delete on id with the current spec
// (partitioned: the records carry the partition source columns, taken from
// the model). Per the spec it deletes the matching ids only in data files
// of that spec and partition, so rows in files of older specs survive: the
// model applies it the same way. Targets are mostly rows in files of the
// current spec, sometimes any row.
func (w *world) opEqualityDelete() (string, error) {
	spec := w.tbl.Spec()
	if err := w.ensurePlacement(); err != nil {
		return "", err
	}
	var ids []int64
	if w.rng.IntN(4) == 0 {
		ids = w.pickLive(1+w.rng.IntN(4), false)
	} else {
		n := 1 + w.rng.IntN(4)
		for _, id := range w.pickLive(len(w.m.rows), false) {
			if w.m.rows[id].specID == spec.ID() && len(ids) < n {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return "", errSkip
	}
	names := []string{w.idName()}
	for _, f := range spec.Fields() {
		if f.SourceID() != fidID {
			names = append(names, w.colName(f.SourceID()))
		}
	}
	sc, err := w.tbl.Schema().Select(true, names...)
	if err != nil {
		return "", err
	}
	_, recs, err := records(sc, ids, w.m.rows)
	if err != nil {
		return "", err
	}
	err = w.commit(func(txn *table.Transaction) error {
		return txn.CommitEqualityDeletes(w.ctx, []int{fidID}, recs, nil)
	})
	if err != nil {
		return "", fmt.Errorf("equality delete: %w", err)
	}
	var deleted []int64
	for _, id := range ids {
		if spec.IsUnpartitioned() || w.m.rows[id].specID == spec.ID() {
			delete(w.m.rows, id)
			deleted = append(deleted, id)
		}
	}
	return fmt.Sprintf("equality delete (spec %d) of ids %v (applies to %v)", spec.ID(), ids, deleted), nil
}

// opGlobalEqualityDelete writes an equality delete on id in the
// unpartitioned spec 0: it applies to every older data file, whatever its
// spec. iceberg-go writes equality deletes with the current spec only, so
// the Parquet file is written here and added with a RowDelta.
func (w *world) opGlobalEqualityDelete() (string, error) {
	ids := w.pickLive(1+w.rng.IntN(4), false)
	if len(ids) == 0 {
		return "", errSkip
	}
	spec0 := w.tbl.Metadata().PartitionSpecByID(0)
	if spec0 == nil || !spec0.IsUnpartitioned() {
		return "", fmt.Errorf("spec 0 is %v, want unpartitioned", spec0)
	}
	sc, err := w.tbl.Schema().Select(true, w.idName())
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(w.tbl.Location(), "/") + "/data/global-eq-" + uuid.NewString() + ".parquet"
	size, err := writeParquet(sc, ids, w.m.rows, path)
	if err != nil {
		return "", err
	}
	b, err := iceberg.NewDataFileBuilder(*spec0, iceberg.EntryContentEqDeletes, path, iceberg.ParquetFile, map[int]any{}, nil, nil, int64(len(ids)), size)
	if err != nil {
		return "", err
	}
	df := b.EqualityFieldIDs([]int{fidID}).Build()
	err = w.commit(func(txn *table.Transaction) error {
		return txn.NewRowDelta(nil).AddDeletes(df).Commit(w.ctx)
	})
	if err != nil {
		return "", fmt.Errorf("global equality delete: %w", err)
	}
	for _, id := range ids {
		delete(w.m.rows, id)
	}
	return fmt.Sprintf("global equality delete of ids %v", ids), nil
}

// writeParquet writes the rows at schema sc (with field ids) to a local
// Parquet file and returns its size.
func writeParquet(sc *iceberg.Schema, ids []int64, rows map[int64]*mrow, path string) (int64, error) {
	rec, err := render(sc, ids, rows)
	if err != nil {
		return 0, err
	}
	defer rec.Release()
	local := strings.TrimPrefix(path, "file://")
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(local)
	if err != nil {
		return 0, err
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	pw, err := pqarrow.NewFileWriter(rec.Schema(), f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		f.Close()
		return 0, err
	}
	if err := pw.Write(rec); err != nil {
		pw.Close()
		return 0, err
	}
	if err := pw.Close(); err != nil {
		return 0, err
	}
	st, err := os.Stat(local)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// ---- another tool's maintenance ----

// opOtherRewrite is another tool rewriting one live data file: it reads
// the file with its deletes applied, writes the rows to new files and
// replaces the file (iceberg-go's RewriteFiles). No row changes; the rows
// move to new files of the current spec. The file may be one a job is
// rewriting, which that job must notice.
func (w *world) opOtherRewrite() (string, error) {
	tasks, err := w.tbl.Scan().PlanFiles(w.ctx)
	if err != nil {
		return "", err
	}
	// A tool that replaces a file must read all of it: scan planning may
	// have split it at its row groups (read.split.target-size).
	tasks = binpack.WholeFiles(tasks)
	if len(tasks) == 0 {
		return "", errSkip
	}
	task := tasks[w.rng.IntN(len(tasks))]
	// On v3 the rows keep their lineage (_row_id), as a v3 rewrite must:
	// the added files then carry first row ids, which v3 requires.
	schema := w.tbl.Schema()
	var scanOpts []table.ScanOption
	var writeOpts []table.WriteRecordOption
	if w.version >= 3 && task.File.FirstRowID() != nil {
		if task.FirstRowID == nil {
			task.FirstRowID = task.File.FirstRowID()
		}
		schema = iceberg.SchemaWithRowLineage(schema)
		scanOpts = append(scanOpts, table.WithRowLineage())
		writeOpts = append(writeOpts, table.WithPreserveRowLineage(schema))
	}
	sc, err := table.SchemaToArrowSchemaWithOptions(schema, table.ArrowSchemaOptions{IncludeFieldIDs: true, TableProperties: w.tbl.Properties()})
	if err != nil {
		return "", err
	}
	_, recs, err := w.tbl.Scan(scanOpts...).ReadTasks(w.ctx, []table.FileScanTask{task})
	if err != nil {
		return "", fmt.Errorf("read %s: %w", task.File.FilePath(), err)
	}
	var added []iceberg.DataFile
	for df, err := range table.WriteRecords(w.ctx, w.tbl, sc, recs, writeOpts...) {
		if err != nil {
			return "", fmt.Errorf("write: %w", err)
		}
		added = append(added, df)
	}
	err = w.commit(func(txn *table.Transaction) error {
		rw := txn.NewRewrite(iceberg.Properties{"rewritten-by": "another-tool"}).DeleteFile(task.File)
		for _, df := range added {
			rw.AddDataFile(df)
		}
		return rw.Commit(w.ctx)
	})
	if err != nil {
		return "", fmt.Errorf("rewrite files: %w", err)
	}
	w.placed = false
	return fmt.Sprintf("another tool rewrites %s into %d files", filepath.Base(task.File.FilePath()), len(added)), nil
}

// opRemoveDanglingDelete is another tool removing a position delete file
// or deletion vector none of whose target data files is live any more (an
// overwrite or a rewrite removed them): no row changes. A job that planned
// to remove the same file as dead must cope.
func (w *world) opRemoveDanglingDelete() (string, error) {
	deletes, live, err := w.liveFiles()
	if err != nil {
		return "", err
	}
	var dangling []iceberg.DataFile
	for _, d := range deletes {
		if d.ContentType() != iceberg.EntryContentPosDeletes {
			continue
		}
		targets, err := positionDeleteTargets(d)
		if err != nil {
			return "", err
		}
		if !slices.ContainsFunc(targets, func(p string) bool { return live[p] }) {
			dangling = append(dangling, d)
		}
	}
	if len(dangling) == 0 {
		return "", errSkip
	}
	d := dangling[w.rng.IntN(len(dangling))]
	err = w.commit(func(txn *table.Transaction) error {
		return txn.NewRewrite(iceberg.Properties{"removed-by": "another-tool"}).DeleteFile(d).Commit(w.ctx)
	})
	if err != nil {
		return "", fmt.Errorf("remove delete file %s: %w", d.FilePath(), err)
	}
	return fmt.Sprintf("another tool removes the dangling delete file %s", filepath.Base(d.FilePath())), nil
}

// liveFiles lists the current snapshot's live delete files and the paths
// of its live data files.
func (w *world) liveFiles() (deletes []iceberg.DataFile, data map[string]bool, err error) {
	data = map[string]bool{}
	snap := w.tbl.CurrentSnapshot()
	if snap == nil {
		return nil, data, nil
	}
	fs, err := w.tbl.FS(w.ctx)
	if err != nil {
		return nil, nil, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, nil, err
	}
	for _, mf := range manifests {
		entries, err := mf.FetchEntries(fs, true)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			if e.Status() == iceberg.EntryStatusDELETED {
				continue
			}
			if df := e.DataFile(); df.ContentType() == iceberg.EntryContentData {
				data[df.FilePath()] = true
			} else {
				deletes = append(deletes, df)
			}
		}
	}
	return deletes, data, nil
}

// positionDeleteTargets returns the data files a position delete file or
// deletion vector may target: its referenced data file, else the distinct
// file_path values it holds.
func positionDeleteTargets(d iceberg.DataFile) ([]string, error) {
	if ref := d.ReferencedDataFile(); ref != nil && *ref != "" {
		return []string{*ref}, nil
	}
	local := strings.TrimPrefix(d.FilePath(), "file://")
	rdr, err := file.OpenParquetFile(local, false)
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	idx := tbl.Schema().FieldIndices("file_path")
	if len(idx) != 1 {
		return nil, fmt.Errorf("%s: no file_path column", d.FilePath())
	}
	seen := map[string]bool{}
	var out []string
	for _, chunk := range tbl.Column(idx[0]).Data().Chunks() {
		for i := 0; i < chunk.Len(); i++ {
			p := chunk.ValueStr(i)
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// ---- schema evolution ----

// primitives a new column may have.
var newColumnTypes = []iceberg.Type{
	iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Float32,
	iceberg.PrimitiveTypes.Float64, iceberg.DecimalTypeOf(9, 2), iceberg.PrimitiveTypes.String,
}

// topLevel lists the current top-level primitive fields the predicate
// accepts.
func (w *world) topLevel(ok func(iceberg.NestedField) bool) []iceberg.NestedField {
	var out []iceberg.NestedField
	for _, f := range w.tbl.Schema().Fields() {
		if _, isStruct := f.Type.(*iceberg.StructType); !isStruct && ok(f) {
			out = append(out, f)
		}
	}
	return out
}

// partitionSources are the field ids any spec of the table partitions by.
func (w *world) partitionSources() map[int]bool {
	out := map[int]bool{}
	for _, spec := range w.tbl.Metadata().PartitionSpecs() {
		for _, f := range spec.Fields() {
			out[f.SourceID()] = true
		}
	}
	return out
}

// droppable: not id or cat (the partition sources), nor any other
// partition source of any spec.
func (w *world) droppable() []iceberg.NestedField {
	src := w.partitionSources()
	return w.topLevel(func(f iceberg.NestedField) bool { return f.ID != fidID && f.ID != fidCat && !src[f.ID] })
}

func (w *world) infoStruct() (iceberg.NestedField, bool) {
	f, ok := w.tbl.Schema().FindFieldByID(fidInfo)
	return f, ok
}

// schemaChanges are the kinds of schema evolution, by name.
var schemaChanges = []string{"add", "rename", "drop", "drop and re-add", "move", "promote", "add nested", "rename nested"}

// opSchemaChange applies one schema change of the given kind ("" picks
// one). The model needs no change (values are keyed by field id); the
// change itself is checked to have happened.
func (w *world) opSchemaChange(kind string) (string, error) {
	if kind == "" {
		kind = schemaChanges[w.rng.IntN(len(schemaChanges))]
	}
	before := w.tbl.Schema()
	var desc string
	var check func(after *iceberg.Schema) error
	update := func(f func(*table.UpdateSchema)) error {
		return w.commit(func(txn *table.Transaction) error {
			us := txn.UpdateSchema(true, false)
			f(us)
			return us.Commit()
		})
	}
	fresh := func() string { w.names++; return fmt.Sprintf("c%d", w.names) }
	var err error
	switch kind {
	case "add":
		name, typ := fresh(), newColumnTypes[w.rng.IntN(len(newColumnTypes))]
		err = update(func(us *table.UpdateSchema) { us.AddColumn([]string{name}, typ, "", false, nil) })
		desc = fmt.Sprintf("add column %s %s", name, typ)
		check = func(after *iceberg.Schema) error {
			if _, ok := after.FindFieldByName(name); !ok {
				return fmt.Errorf("column %s not added", name)
			}
			return nil
		}
	case "rename":
		fs := w.topLevel(func(f iceberg.NestedField) bool { return f.ID != fidID })
		f := fs[w.rng.IntN(len(fs))]
		name := f.Name + "_r" + strconv.Itoa(w.names)
		w.names++
		err = update(func(us *table.UpdateSchema) { us.RenameColumn([]string{f.Name}, name) })
		desc = fmt.Sprintf("rename column %s (field %d) to %s", f.Name, f.ID, name)
		check = func(after *iceberg.Schema) error {
			if g, ok := after.FindFieldByName(name); !ok || g.ID != f.ID {
				return fmt.Errorf("field %d not renamed to %s", f.ID, name)
			}
			return nil
		}
	case "drop":
		fs := w.droppable()
		if len(fs) < 2 {
			return "", errSkip
		}
		f := fs[w.rng.IntN(len(fs))]
		err = update(func(us *table.UpdateSchema) { us.DeleteColumn([]string{f.Name}) })
		desc = fmt.Sprintf("drop column %s (field %d)", f.Name, f.ID)
		check = func(after *iceberg.Schema) error {
			if _, ok := after.FindFieldByID(f.ID); ok {
				return fmt.Errorf("field %d not dropped", f.ID)
			}
			return nil
		}
	case "drop and re-add":
		fs := w.droppable()
		if len(fs) == 0 {
			return "", errSkip
		}
		f := fs[w.rng.IntN(len(fs))]
		typ := f.Type
		if w.rng.IntN(2) == 0 {
			typ = newColumnTypes[w.rng.IntN(len(newColumnTypes))]
		}
		err = update(func(us *table.UpdateSchema) {
			us.DeleteColumn([]string{f.Name}).AddColumn([]string{f.Name}, typ, "", false, nil)
		})
		desc = fmt.Sprintf("drop column %s (field %d) and re-add it as %s", f.Name, f.ID, typ)
		check = func(after *iceberg.Schema) error {
			g, ok := after.FindFieldByName(f.Name)
			if !ok || g.ID == f.ID {
				return fmt.Errorf("column %s not re-added with a new field id (%v)", f.Name, g)
			}
			desc += fmt.Sprintf(" (field %d)", g.ID)
			return nil
		}
	case "move":
		fs := before.Fields()
		f := fs[w.rng.IntN(len(fs))]
		if w.rng.IntN(2) == 0 && f.ID != fs[0].ID {
			err = update(func(us *table.UpdateSchema) { us.MoveFirst([]string{f.Name}) })
			desc = fmt.Sprintf("move column %s first", f.Name)
		} else {
			var others []iceberg.NestedField
			for i, o := range fs {
				if o.ID != f.ID && (i+1 >= len(fs) || fs[i+1].ID != f.ID) {
					others = append(others, o)
				}
			}
			if len(others) == 0 {
				return "", errSkip
			}
			other := others[w.rng.IntN(len(others))]
			err = update(func(us *table.UpdateSchema) { us.MoveAfter([]string{f.Name}, []string{other.Name}) })
			desc = fmt.Sprintf("move column %s after %s", f.Name, other.Name)
		}
		check = func(after *iceberg.Schema) error {
			if slices.Equal(fieldIDs(before), fieldIDs(after)) {
				return fmt.Errorf("column order unchanged: %v", fieldIDs(after))
			}
			return nil
		}
	case "promote":
		type cand struct {
			path []string
			id   int
			to   iceberg.Type
		}
		var cs []cand
		var walk func(prefix []string, fields []iceberg.NestedField)
		walk = func(prefix []string, fields []iceberg.NestedField) {
			for _, f := range fields {
				path := append(slices.Clone(prefix), f.Name)
				switch t := f.Type.(type) {
				case *iceberg.StructType:
					walk(path, t.FieldList)
				case iceberg.Int32Type:
					cs = append(cs, cand{path, f.ID, iceberg.PrimitiveTypes.Int64})
				case iceberg.Float32Type:
					cs = append(cs, cand{path, f.ID, iceberg.PrimitiveTypes.Float64})
				case iceberg.DecimalType:
					if t.Precision() < 12 {
						cs = append(cs, cand{path, f.ID, iceberg.DecimalTypeOf(12, t.Scale())})
					}
				}
			}
		}
		walk(nil, before.Fields())
		if len(cs) == 0 {
			return "", errSkip
		}
		c := cs[w.rng.IntN(len(cs))]
		err = update(func(us *table.UpdateSchema) {
			us.UpdateColumn(c.path, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: c.to}})
		})
		desc = fmt.Sprintf("promote %s (field %d) to %s", strings.Join(c.path, "."), c.id, c.to)
		check = func(after *iceberg.Schema) error {
			if g, ok := after.FindFieldByID(c.id); !ok || !g.Type.Equals(c.to) {
				return fmt.Errorf("field %d not promoted to %s: %v", c.id, c.to, g)
			}
			return nil
		}
	case "add nested":
		info, ok := w.infoStruct()
		if !ok {
			return "", errSkip
		}
		name, typ := fresh(), newColumnTypes[w.rng.IntN(len(newColumnTypes))]
		err = update(func(us *table.UpdateSchema) { us.AddColumn([]string{info.Name, name}, typ, "", false, nil) })
		desc = fmt.Sprintf("add nested column %s.%s %s", info.Name, name, typ)
		check = func(after *iceberg.Schema) error {
			if _, ok := after.FindFieldByName(info.Name + "." + name); !ok {
				return fmt.Errorf("nested column %s.%s not added", info.Name, name)
			}
			return nil
		}
	case "rename nested":
		info, ok := w.infoStruct()
		if !ok {
			return "", errSkip
		}
		kids := info.Type.(*iceberg.StructType).FieldList
		k := kids[w.rng.IntN(len(kids))]
		name := k.Name + "_r" + strconv.Itoa(w.names)
		w.names++
		err = update(func(us *table.UpdateSchema) { us.RenameColumn([]string{info.Name, k.Name}, name) })
		desc = fmt.Sprintf("rename nested column %s.%s (field %d) to %s", info.Name, k.Name, k.ID, name)
		check = func(after *iceberg.Schema) error {
			if g, ok := after.FindFieldByName(info.Name + "." + name); !ok || g.ID != k.ID {
				return fmt.Errorf("nested field %d not renamed", k.ID)
			}
			return nil
		}
	default:
		return "", fmt.Errorf("unknown schema change %q", kind)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", desc, err)
	}
	if err := check(w.tbl.Schema()); err != nil {
		return "", fmt.Errorf("%s: %w", desc, err)
	}
	return "schema: " + desc, nil
}

func fieldIDs(sc *iceberg.Schema) []int {
	var out []int
	for _, f := range sc.Fields() {
		out = append(out, f.ID)
	}
	return out
}

// ---- partition evolution ----

var specChanges = []string{"add identity(cat)", "add bucket(id)", "remove a field", "change transform"}

// opSpecChange evolves the partition spec: add identity(cat) or
// bucket[4](id), remove a field, or change a field's transform
// (bucket[N](id) to another N, identity(cat) to truncate[2](cat) and
// back). Rows keep their files (and specs); new files use the new spec.
func (w *world) opSpecChange(kind string) (string, error) {
	if kind == "" {
		kind = specChanges[w.rng.IntN(len(specChanges))]
	}
	spec := w.tbl.Spec()
	var fields []iceberg.PartitionField
	for _, f := range spec.Fields() {
		fields = append(fields, f)
	}
	has := func(src int) (iceberg.PartitionField, bool) {
		for _, f := range fields {
			if f.SourceID() == src {
				return f, true
			}
		}
		return iceberg.PartitionField{}, false
	}
	cat := w.colName(fidCat)
	var desc string
	var apply func(us *table.UpdateSpec)
	switch kind {
	case "add identity(cat)":
		if _, ok := has(fidCat); ok {
			return "", errSkip
		}
		apply = func(us *table.UpdateSpec) { us.AddIdentity(cat) }
		desc = "add identity(" + cat + ")"
	case "add bucket(id)":
		if _, ok := has(fidID); ok {
			return "", errSkip
		}
		n := []int{2, 4}[w.rng.IntN(2)]
		apply = func(us *table.UpdateSpec) { us.AddField(w.idName(), iceberg.BucketTransform{NumBuckets: n}, "") }
		desc = fmt.Sprintf("add bucket[%d](id)", n)
	case "remove a field":
		if len(fields) == 0 {
			return "", errSkip
		}
		f := fields[w.rng.IntN(len(fields))]
		apply = func(us *table.UpdateSpec) { us.RemoveField(f.Name) }
		desc = "remove partition field " + f.Name
	case "change transform":
		if len(fields) == 0 {
			return "", errSkip
		}
		f := fields[w.rng.IntN(len(fields))]
		var to iceberg.Transform
		switch t := f.Transform.(type) {
		case iceberg.BucketTransform:
			to = iceberg.BucketTransform{NumBuckets: map[int]int{2: 4, 4: 2}[t.NumBuckets]}
		case iceberg.IdentityTransform:
			to = iceberg.TruncateTransform{Width: 2}
		default:
			to = iceberg.IdentityTransform{}
		}
		src := w.colName(f.SourceID())
		apply = func(us *table.UpdateSpec) { us.RemoveField(f.Name).AddField(src, to, "") }
		desc = fmt.Sprintf("change partition field %s from %s to %s", f.Name, f.Transform, to)
	default:
		return "", fmt.Errorf("unknown spec change %q", kind)
	}
	err := w.commit(func(txn *table.Transaction) error {
		us := txn.UpdateSpec(true)
		apply(us)
		return us.Commit()
	})
	if err != nil {
		return "", fmt.Errorf("%s: %w", desc, err)
	}
	after := w.tbl.Spec()
	if after.ID() == spec.ID() {
		return "", fmt.Errorf("%s: spec still %d", desc, spec.ID())
	}
	return fmt.Sprintf("spec: %s (spec %d -> %d: %v)", desc, spec.ID(), after.ID(), specString(after)), nil
}

func specString(spec iceberg.PartitionSpec) string {
	var parts []string
	for _, f := range spec.Fields() {
		parts = append(parts, fmt.Sprintf("%s=%s(%d)", f.Name, f.Transform, f.SourceID()))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// ---- choosing operations ----

// op is one kind of operation.
type op struct {
	name string
	run  func(w *world) (string, error)
}

var ops = []op{
	{"append", func(w *world) (string, error) { return w.opAppend(false) }},
	{"big append", func(w *world) (string, error) { return w.opAppend(true) }},
	{"overwrite", (*world).opOverwrite},
	{"position delete", (*world).opPositionDelete},
	{"equality delete", (*world).opEqualityDelete},
	{"global equality delete", (*world).opGlobalEqualityDelete},
	{"schema change", func(w *world) (string, error) { return w.opSchemaChange("") }},
	{"spec change", func(w *world) (string, error) { return w.opSpecChange("") }},
	{"another tool's rewrite", (*world).opOtherRewrite},
	{"dangling delete removal", (*world).opRemoveDanglingDelete},
}

// opWeights: how often each op is drawn (index-aligned with ops).
var opWeights = []int{5, 1, 2, 4, 3, 2, 6, 3, 1, 1}

func (w *world) randomOp() op {
	total := 0
	for _, x := range opWeights {
		total += x
	}
	n := w.rng.IntN(total)
	for i, x := range opWeights {
		if n < x {
			return ops[i]
		}
		n -= x
	}
	return ops[0]
}

// describeFiles renders the current snapshot's live files, for failure
// reports: data files with spec, partition, data sequence number and
// record count; delete files with kind, spec, sequence number and target.
func (w *world) describeFiles() string {
	snap := w.tbl.CurrentSnapshot()
	if snap == nil {
		return "  (no snapshot)\n"
	}
	fs, err := w.tbl.FS(w.ctx)
	if err != nil {
		return err.Error()
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, mf := range manifests {
		entries, err := mf.FetchEntries(fs, true)
		if err != nil {
			return err.Error()
		}
		for _, e := range entries {
			df := e.DataFile()
			seq := "?"
			if s := e.SequenceNum(); s >= 0 {
				seq = strconv.FormatInt(s, 10)
			}
			kind := "data"
			switch {
			case df.ContentType() == iceberg.EntryContentEqDeletes:
				kind = fmt.Sprintf("eq-delete%v", df.EqualityFieldIDs())
			case df.ContentType() == iceberg.EntryContentPosDeletes && df.FileFormat() == iceberg.PuffinFile:
				kind = "dv"
			case df.ContentType() == iceberg.EntryContentPosDeletes:
				kind = "pos-delete"
			}
			target := ""
			if ref := df.ReferencedDataFile(); ref != nil {
				target = " -> " + filepath.Base(*ref)
			}
			lines = append(lines, fmt.Sprintf("  %-14s spec %d %v seq %s rows %d %s%s", kind, df.SpecID(), df.Partition(), seq, df.Count(), filepath.Base(df.FilePath()), target))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// renderReader renders the staged rows (in ids order) at schema sc as a
// one-batch record reader, the input Append and Transaction.Append take.
func renderReader(sc *iceberg.Schema, ids []int64, staged map[int64]*mrow) (array.RecordReader, error) {
	rec, err := render(sc, ids, staged)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
}
