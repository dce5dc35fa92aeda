package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/rewrite"
)

// The tests in this file evolve a table's schema or partition spec, then
// compact it, and require the live rows read at the table's current schema
// to be exactly what they were before (the "before" read is iceberg-go's own
// scan at the current schema, which maps every file's columns by field id).
// Files written before and after the evolution are in every job.

// evolveSchema commits one schema change.
func (e *env) evolveSchema(f func(u *table.UpdateSchema)) {
	e.t.Helper()
	txn := e.load().NewTransaction()
	u := txn.UpdateSchema(true, false)
	f(u)
	if err := u.Commit(); err != nil {
		e.t.Fatalf("schema update: %v", err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Fatalf("commit schema update: %v", err)
	}
}

// evolveSpec commits one partition spec change.
func (e *env) evolveSpec(f func(u *table.UpdateSpec)) {
	e.t.Helper()
	txn := e.load().NewTransaction()
	u := txn.UpdateSpec(true)
	f(u)
	if err := u.Commit(); err != nil {
		e.t.Fatalf("spec update: %v", err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Fatalf("commit spec update: %v", err)
	}
}

// appendAtCurrentSchema appends files rows per file, in files files, with ids
// from firstID on, at the table's current schema: every column gets a value
// derived from the row id and the column's field id (so a value that lands
// in the wrong column changes the fingerprint).
func (e *env) appendAtCurrentSchema(firstID int64, files, rows int) {
	e.t.Helper()
	e.appendGenerated(firstID, files, rows, appendEvolvedValue)
}

// appendGenerated appends files of rows at the current schema, row id's
// value of each column from value.
func (e *env) appendGenerated(firstID int64, files, rows int, value func(*testing.T, array.Builder, iceberg.NestedField, int64)) {
	e.t.Helper()
	for f := 0; f < files; f++ {
		tbl := e.load()
		sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
		if err != nil {
			e.t.Fatal(err)
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for r := 0; r < rows; r++ {
			id := firstID + int64(f*rows+r)
			for i, fld := range tbl.Schema().Fields() {
				value(e.t, b.Field(i), fld, id)
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := tbl.Append(e.ctx, rdr, nil); err != nil {
			e.t.Fatalf("append at current schema: %v", err)
		}
		rdr.Release()
		rec.Release()
	}
}

func appendEvolvedValue(t *testing.T, b array.Builder, f iceberg.NestedField, id int64) {
	t.Helper()
	if f.Name == "id" {
		b.(*array.Int64Builder).Append(id)
		return
	}
	if f.ID == 2 { // the region column, whatever its name now (a partition source)
		b.(*array.StringBuilder).Append(sampletable.Region(int(id % 3)))
		return
	}
	v := id*31 + int64(f.ID)
	switch ft := f.Type.(type) {
	case iceberg.Int32Type:
		b.(*array.Int32Builder).Append(int32(v % 100000))
	case iceberg.Int64Type:
		b.(*array.Int64Builder).Append(v)
	case iceberg.Float32Type:
		b.(*array.Float32Builder).Append(float32(v%1000) / 4)
	case iceberg.Float64Type:
		b.(*array.Float64Builder).Append(float64(v%1000) / 8)
	case iceberg.StringType:
		b.(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", f.Name, v))
	case iceberg.DecimalType:
		b.(*array.Decimal128Builder).Append(decimal128.FromI64(v % 1000000))
	case *iceberg.StructType:
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for i, child := range ft.FieldList {
			appendEvolvedValue(t, sb.FieldBuilder(i), child, id)
		}
	default:
		t.Fatalf("appendEvolvedValue: no generator for %s", f.Type)
	}
}

// compactAndRequireSame runs one job and requires it to commit with the
// rows read at the current schema unchanged.
func (e *env) compactAndRequireSame() plan.Result {
	e.t.Helper()
	want := e.fingerprint()
	r := e.plan()
	if r.Outcome != plan.OutcomePlanned {
		e.t.Fatalf("plan: %s (%s)", r.Outcome, r.Reason)
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	return r
}

// createEvolvedTable creates evolvedTable in the given format version.
func (e *env) createEvolvedTable(version int) {
	e.t.Helper()
	o := evolvedTable
	o.FormatVersion = version
	e.createTable(o)
}

// evolvedTable is a partitioned sample table with position (or DV) and
// equality deletes, several files per partition.
var evolvedTable = sampletable.Options{Partitions: 3, Files: 6, RowsPerFile: 40, PositionDeletes: true, EqualityDeletes: true}

func TestEvolution_SchemaChangesKeepEveryValueInItsColumn(t *testing.T) {
	cases := []struct {
		name   string
		evolve func(e *env)
		check  func(t *testing.T, e *env)
	}{
		{"rename then add a column with the old name", func(e *env) {
			e.evolveSchema(func(u *table.UpdateSchema) { u.RenameColumn([]string{"note"}, "comment") })
			e.evolveSchema(func(u *table.UpdateSchema) {
				u.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil)
			})
		}, func(t *testing.T, e *env) {
			requireColumn(t, e, "comment", func(v string) bool { return strings.HasPrefix(v, "row ") || strings.HasPrefix(v, "comment-") }, "the old notes")
		}},
		{"drop then re-add a column with the same name", func(e *env) {
			e.evolveSchema(func(u *table.UpdateSchema) { u.DeleteColumn([]string{"note"}) })
			e.evolveSchema(func(u *table.UpdateSchema) {
				u.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil)
			})
		}, func(t *testing.T, e *env) {
			requireColumn(t, e, "note", func(v string) bool { return !strings.HasPrefix(v, "row ") }, "no dropped value back")
		}},
		{"swap two column names, one a partition source", func(e *env) {
			e.evolveSchema(func(u *table.UpdateSchema) { u.RenameColumn([]string{"region"}, "tmp") })
			e.evolveSchema(func(u *table.UpdateSchema) { u.RenameColumn([]string{"note"}, "region") })
			e.evolveSchema(func(u *table.UpdateSchema) { u.RenameColumn([]string{"tmp"}, "note") })
		}, func(t *testing.T, e *env) {
			requireColumn(t, e, "note", func(v string) bool { return strings.HasPrefix(v, "region-") }, "the regions")
		}},
		{"plain rename", func(e *env) {
			e.evolveSchema(func(u *table.UpdateSchema) { u.RenameColumn([]string{"amount"}, "total") })
		}, nil},
		{"reorder", func(e *env) {
			e.evolveSchema(func(u *table.UpdateSchema) { u.MoveFirst([]string{"note"}) })
		}, nil},
		{"add a column", func(e *env) {
			e.evolveSchema(func(u *table.UpdateSchema) {
				u.AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Int64, "", false, nil)
			})
		}, nil},
		{"type promotion int to long, float to double, decimal widening", func(e *env) {
			e.evolveSchema(func(u *table.UpdateSchema) {
				u.AddColumn([]string{"qty"}, iceberg.PrimitiveTypes.Int32, "", false, nil)
				u.AddColumn([]string{"ratio"}, iceberg.PrimitiveTypes.Float32, "", false, nil)
				u.AddColumn([]string{"price"}, iceberg.DecimalTypeOf(9, 2), "", false, nil)
			})
			e.appendAtCurrentSchema(100_000, 3, 30)
			e.evolveSchema(func(u *table.UpdateSchema) {
				u.UpdateColumn([]string{"qty"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}})
				u.UpdateColumn([]string{"ratio"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Float64}})
				u.UpdateColumn([]string{"price"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.DecimalTypeOf(12, 2)}})
			})
		}, nil},
		{"nested fields added and renamed", func(e *env) {
			e.evolveSchema(func(u *table.UpdateSchema) {
				u.AddColumn([]string{"attrs"}, &iceberg.StructType{FieldList: []iceberg.NestedField{
					{ID: 100, Name: "a", Type: iceberg.PrimitiveTypes.Int64},
					{ID: 101, Name: "b", Type: iceberg.PrimitiveTypes.String},
				}}, "", false, nil)
			})
			e.appendAtCurrentSchema(100_000, 3, 30)
			e.evolveSchema(func(u *table.UpdateSchema) {
				u.RenameColumn([]string{"attrs", "a"}, "x")
				u.AddColumn([]string{"attrs", "a"}, iceberg.PrimitiveTypes.String, "", false, nil)
			})
		}, nil},
	}
	for _, version := range []int{2, 3} {
		for _, tc := range cases {
			for _, writeAfter := range []bool{false, true} {
				name := fmt.Sprintf("v%d/%s/no write since", version, tc.name)
				if writeAfter {
					name = fmt.Sprintf("v%d/%s/files at the new schema too", version, tc.name)
				}
				t.Run(name, func(t *testing.T) {
					e := setup(t)
					o := evolvedTable
					o.FormatVersion = version
					e.createTable(o)
					tc.evolve(e)
					// Without a write since the evolution, the pinned snapshot's
					// schema is older than the table's current schema.
					if writeAfter {
						e.appendAtCurrentSchema(200_000, 3, 30)
					}
					schemaBefore := e.load().Schema().ID
					e.compactAndRequireSame()
					if got := e.load().Schema().ID; got != schemaBefore {
						t.Fatalf("compaction changed the schema: %d -> %d", schemaBefore, got)
					}
					if tc.check != nil {
						tc.check(t, e)
					}
				})
			}
		}
	}
}

// requireColumn checks every non-null value of a string column.
func requireColumn(t *testing.T, e *env, col string, ok func(string) bool, what string) {
	t.Helper()
	_, records, err := e.load().Scan(table.WithSelectedFields("id", col)).ToArrowRecords(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for rec, err := range records {
		if err != nil {
			t.Fatal(err)
		}
		c := rec.Column(int(rec.Schema().FieldIndices(col)[0])).(*array.String)
		for i := 0; i < c.Len(); i++ {
			if c.IsNull(i) {
				continue
			}
			seen++
			if !ok(c.Value(i)) {
				t.Fatalf("column %s holds %q, want %s", col, c.Value(i), what)
			}
		}
		rec.Release()
	}
	if seen == 0 && what != "no dropped value back" {
		t.Fatalf("column %s has no values, want %s", col, what)
	}
}

// TestEvolution_RowLineageSurvivesASchemaChange: on v3, _row_id and
// _last_updated_sequence_number of every row are unchanged by a compaction
// after a column was added.
func TestEvolution_RowLineageSurvivesASchemaChange(t *testing.T) {
	e := setup(t)
	e.createEvolvedTable(3)
	e.evolveSchema(func(u *table.UpdateSchema) {
		u.AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Int64, "", false, nil)
	})
	e.appendAtCurrentSchema(200_000, 3, 30)
	before := e.lineage()
	e.compactAndRequireSame()
	after := e.lineage()
	if before != after {
		t.Fatalf("row lineage changed: %s -> %s", before, after)
	}
}

// lineage fingerprints (id, _row_id, _last_updated_sequence_number).
func (e *env) lineage() fingerprint.Fingerprint {
	e.t.Helper()
	f, err := fingerprint.Scan(e.ctx, e.load().Scan(table.WithSelectedFields("id", iceberg.RowIDColumnName, iceberg.LastUpdatedSequenceNumberColumnName), table.WithRowLineage()))
	if err != nil {
		e.t.Fatal(err)
	}
	if f.Rows == 0 {
		e.t.Fatal("no rows")
	}
	return f
}

func TestEvolution_PartitionSpecChanges(t *testing.T) {
	cases := []struct {
		name      string
		start     sampletable.Options
		evolve    func(e *env)
		props     map[string]string
		wantSpecs func(cur int) []int
	}{
		{"a bucket field added: rows spread over new partitions", evolvedTable, func(e *env) {
			e.evolveSpec(func(u *table.UpdateSpec) { u.AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket") })
		}, nil, func(cur int) []int { return []int{cur} }},
		{"unpartitioned to partitioned", sampletable.Options{Files: 8, RowsPerFile: 50, PositionDeletes: true, EqualityDeletes: true}, func(e *env) {
			e.evolveSpec(func(u *table.UpdateSpec) { u.AddIdentity("region") })
		}, nil, func(cur int) []int { return []int{cur} }},
		{"partition field removed", evolvedTable, func(e *env) {
			e.evolveSpec(func(u *table.UpdateSpec) { u.RemoveField("region") })
		}, nil, func(cur int) []int { return []int{cur} }},
		// Each old partition holds 3 files, fewer than min-input-files (5):
		// the old spec's files are grouped across its partitions, as
		// Spark's rewrite_data_files groups them, so they still move.
		{"an old spec's partitions each too small to compact still move", sampletable.Options{Partitions: 3, Files: 3, RowsPerFile: 40, PositionDeletes: true}, func(e *env) {
			e.evolveSpec(func(u *table.UpdateSpec) { u.AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket") })
		}, nil, func(cur int) []int { return []int{cur} }},
		{"output-spec-id=input keeps each group's spec", evolvedTable, func(e *env) {
			e.evolveSpec(func(u *table.UpdateSpec) { u.AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket") })
		}, map[string]string{optin.PropertyOutputSpec: "input"}, func(cur int) []int { return []int{0, cur} }},
	}
	for _, version := range []int{2, 3} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("v%d/%s", version, tc.name), func(t *testing.T) {
				e := setup(t)
				o := tc.start
				o.FormatVersion = version
				o.Properties = tc.props
				e.createTable(o)
				tc.evolve(e)
				e.appendAtCurrentSchema(200_000, 6, 30)
				e.compactAndRequireSame()
				tbl := e.load()
				cur := tbl.Metadata().DefaultPartitionSpec()
				e.requirePartitionsMatchRows(tbl)
				specs := map[int]int{}
				for _, task := range e.liveTasks() {
					specs[int(task.File.SpecID())]++
				}
				for _, want := range tc.wantSpecs(cur) {
					if specs[want] == 0 {
						t.Fatalf("no live file in spec %d after compaction: %v", want, specs)
					}
				}
				if len(tc.wantSpecs(cur)) == 1 && len(specs) != 1 {
					t.Fatalf("live files in specs %v, want only the current spec %d", specs, cur)
				}
			})
		}
	}
}

func (e *env) liveTasks() []table.FileScanTask {
	e.t.Helper()
	tasks, err := e.load().Scan().PlanFiles(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return tasks
}

// requirePartitionsMatchRows reads every live data file on its own and
// checks each row's partition values, computed with the file's spec, equal
// the file's partition (a row routed to the wrong partition would be pruned
// away by queries that filter on it).
func (e *env) requirePartitionsMatchRows(tbl *table.Table) {
	e.t.Helper()
	sc := tbl.Schema()
	for _, task := range e.liveTasks() {
		spec := tbl.Metadata().PartitionSpecByID(int(task.File.SpecID()))
		if spec == nil || spec.IsUnpartitioned() {
			continue
		}
		one := task
		one.DeleteFiles, one.EqualityDeleteFiles, one.DeletionVectorFiles = nil, nil, nil
		_, records, err := tbl.Scan().ReadTasks(e.ctx, []table.FileScanTask{one})
		if err != nil {
			e.t.Fatal(err)
		}
		for rec, err := range records {
			if err != nil {
				e.t.Fatal(err)
			}
			for _, pf := range spec.Fields() {
				src, ok := sc.FindFieldByID(pf.SourceID())
				if !ok {
					continue
				}
				col := rec.Column(rec.Schema().FieldIndices(src.Name)[0])
				want := task.File.Partition()[pf.FieldID]
				for i := 0; i < col.Len(); i++ {
					got := pf.Transform.Apply(iceberg.Optional[iceberg.Literal]{Valid: !col.IsNull(i), Val: literalOf(col, i)})
					var gotV any
					if got.Valid {
						gotV = got.Val.Any()
					}
					if fmt.Sprint(gotV) != fmt.Sprint(want) {
						e.t.Fatalf("file %s (spec %d) holds a row with %s=%v in partition %s=%v", task.File.FilePath(), spec.ID(), src.Name, col.ValueStr(i), pf.Name, want)
					}
				}
			}
			rec.Release()
		}
	}
}

func literalOf(col arrow.Array, i int) iceberg.Literal {
	if col.IsNull(i) {
		return nil
	}
	switch c := col.(type) {
	case *array.Int64:
		return iceberg.NewLiteral(c.Value(i))
	case *array.Int32:
		return iceberg.NewLiteral(c.Value(i))
	case *array.String:
		return iceberg.NewLiteral(c.Value(i))
	}
	panic(fmt.Sprintf("literalOf: %T", col))
}

// TestEvolution_GlobalEqualityDeleteAfterASpecChange: the table was
// partitioned, became unpartitioned, and an equality delete was written
// under the new (unpartitioned, so global) spec: it applies to the old
// files of the partitioned spec. Planning carries it with their tasks,
// the rewrite applies it, and it stays for the files left out.
func TestEvolution_GlobalEqualityDeleteAfterASpecChange(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := setup(t)
			e.createEvolvedTable(version)
			e.evolveSpec(func(u *table.UpdateSpec) { u.RemoveField("region") })
			var ids []int64
			for id := int64(2); id < 700; id += 13 {
				ids = append(ids, id)
			}
			before := e.fingerprint()
			tbl, err := sampletable.DeleteByEquality(e.ctx, e.load(), ids, nil)
			if err != nil {
				t.Fatal(err)
			}
			if after := e.fingerprint(); after.Rows >= before.Rows {
				t.Fatalf("the global equality delete deleted nothing (%d -> %d rows)", before.Rows, after.Rows)
			}
			_ = tbl
			e.compactAndRequireSame()
			if st := e.stats(); st.EqualityDeleteFiles != 0 {
				t.Fatalf("every file was rewritten but %d equality delete files are left", st.EqualityDeleteFiles)
			}
		})
	}
}

// TestEvolution_RepartitionedInSmallWindows: a group whose rows move to a
// new spec is written in windows (runs) when it is larger than the window;
// every run's files carry the attempt's stem, rows land in their
// partitions, and nothing is lost.
func TestEvolution_RepartitionedInSmallWindows(t *testing.T) {
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 2000, PositionDeletes: true, EqualityDeletes: true})
	e.evolveSpec(func(u *table.UpdateSpec) { u.AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket") })
	r, err := rewrite.New(rewrite.Settings{MaxAttempts: 3, RepartitionWindowBytes: 64 << 10}, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Commits, e.deps.Tables, nil, nil, rewrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.rewriter = r
	res := e.compactAndRequireSame()
	e.requirePartitionsMatchRows(e.load())
	runs := map[string]bool{}
	for _, task := range e.liveTasks() {
		name := filepath.Base(task.File.FilePath())
		// <partition>-<task>-<write UUID>-<file>.parquet; the UUID's last
		// four hex digits are the run.
		runs[name[len(name)-len("0000-00000.parquet"):len(name)-len("-00000.parquet")]] = true
	}
	if len(runs) < 3 {
		t.Fatalf("files of %d runs (job %s), want several windows", len(runs), res.JobID)
	}
}

// TestEvolution_SchemaChangeBetweenPlanningAndCommit: the schema changes
// while the job runs (after planning, and again after the rewrites). The
// new files, written with the schema of the pinned metadata, are still
// valid: the committer commits, and the rows read at the newest schema are
// the rows before, with the new column null.
func TestEvolution_SchemaChangeBetweenPlanningAndCommit(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := setup(t)
			e.createEvolvedTable(version)
			r := e.plan()
			e.evolveSchema(func(u *table.UpdateSchema) { u.RenameColumn([]string{"note"}, "comment") })
			e.drainTasks()
			e.evolveSchema(func(u *table.UpdateSchema) {
				u.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil)
			})
			want := e.fingerprint()
			e.drainCommits()
			e.requireCommitted(r.JobID, want)
			requireColumn(t, e, "comment", func(v string) bool { return strings.HasPrefix(v, "row ") }, "the old notes")
		})
	}
}

// TestEvolution_ConcurrentEqualityDeleteInAPartitionRowsMoveOutOfAborts: the
// job moves the rows of region partitions into a new spec; meanwhile a
// writer deletes rows by equality in one of those old partitions. The delete
// would no longer apply to the moved rows (the spec scopes it to its own
// spec and partition), so the job aborts and the rows stay deleted.
func TestEvolution_ConcurrentEqualityDeleteInAPartitionRowsMoveOutOfAborts(t *testing.T) {
	e := setup(t)
	e.createTable(evolvedTable)
	oldSpec := e.load().Metadata().DefaultPartitionSpec()
	e.evolveSpec(func(u *table.UpdateSpec) { u.AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket") })
	r := e.plan()
	e.drainTasks()
	// A writer that still writes with the old spec (iceberg-go writes in
	// the default spec, so the test switches the default back and forth).
	e.setDefaultSpec(oldSpec)
	before := e.fingerprint()
	regionOf := sampletable.RegionOf(evolvedTable.Partitions, evolvedTable.RowsPerFile)
	if _, err := sampletable.DeleteByEquality(e.ctx, e.load(), []int64{1, 2, 4}, regionOf); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	if want.Rows != before.Rows-3 {
		t.Fatalf("the concurrent delete removed %d rows, want 3", before.Rows-want.Rows)
	}
	e.drainCommits()
	e.requireAborted(r.JobID, "equality delete", want)
}

// setDefaultSpec makes an existing spec the table's default again (as a
// writer holding an older spec would write).
func (e *env) setDefaultSpec(id int) {
	e.t.Helper()
	tbl := e.load()
	if _, _, err := e.cat.CommitTable(e.ctx, tbl.Identifier(), nil, []table.Update{table.NewSetDefaultSpecUpdate(id)}); err != nil {
		e.t.Fatalf("set default spec %d: %v", id, err)
	}
}
