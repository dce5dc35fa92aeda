package tests

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// TestEvolution_AnEqualityKeyAddedAfterAFileReadsAsNullInIt: a Flink-style
// upsert keyed by (region, tag), where tag was added after some files were
// written. The spec's column projection reads a field a data file does not
// have as null (no initial-default), and an equality delete's null matches
// a null (the spec's "id = 4 and category is null" example), so the key
// (region-00, null) deletes every older row of region-00 and no newer one,
// and (region-01, <a newer row's tag>) deletes that row. Before, iceberg-go
// failed every scan of such a table ("equality field ID ... not found"),
// and so did every compaction and delete-file rewrite job, on every
// delivery. Both jobs now keep exactly the rows the delete leaves.
func TestEvolution_AnEqualityKeyAddedAfterAFileReadsAsNullInIt(t *testing.T) {
	jobs := []struct {
		name string
		plan func(e *env) plan.Result
	}{
		{"compaction", func(e *env) plan.Result { return e.plan() }},
		{"delete-file rewrite", func(e *env) plan.Result { return e.planDeleteRewrite() }},
	}
	for _, version := range []int{2, 3} {
		for _, job := range jobs {
			t.Run(fmt.Sprintf("v%d/%s", version, job.name), func(t *testing.T) {
				e := setup(t)
				e.createEvolvedTable(version)
				e.evolveSchema(func(u *table.UpdateSchema) {
					u.AddColumn([]string{"tag"}, iceberg.PrimitiveTypes.String, "", false, nil)
				})
				e.appendAtCurrentSchema(200_000, 3, 30)
				tag, ok := e.load().Schema().FindFieldByName("tag")
				if !ok {
					t.Fatal("no tag column")
				}
				before := e.regionByID()
				// 200_002 is in region-01 (appendAtCurrentSchema puts id in
				// region id%3), its tag is what appendEvolvedValue writes.
				newer := int64(200_002)
				want := maps.Clone(before)
				for id, region := range before {
					if id < 200_000 && region == sampletable.Region(0) {
						delete(want, id)
					}
				}
				delete(want, newer)
				if len(want) == len(before)-1 {
					t.Fatal("no older row in region-00: the case tests nothing")
				}
				e.deleteByRegionAndTag(tag.ID, []string{sampletable.Region(0), sampletable.Region(1)},
					[]*string{nil, ptr(fmt.Sprintf("tag-%d", newer*31+int64(tag.ID)))})
				e.requireRows(want, "after the delete, read by iceberg-go")

				r := job.plan(e)
				if r.Outcome != plan.OutcomePlanned {
					t.Fatalf("plan: %s (%s)", r.Outcome, r.Reason)
				}
				e.drainTasks()
				e.drainCommits()
				if j := e.job(r.JobID); j.State != "committed" {
					t.Fatalf("job %s: %s (%s)\n%s", r.JobID, j.State, j.Reason, e.diagnose(r.JobID))
				}
				e.requireRows(want, "after the "+job.name)
			})
		}
	}
}

func ptr[T any](v T) *T { return &v }

// regionByID reads every live row's id and region.
func (e *env) regionByID() map[int64]string {
	e.t.Helper()
	_, records, err := e.load().Scan(table.WithSelectedFields("id", "region")).ToArrowRecords(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[int64]string{}
	for rec, err := range records {
		if err != nil {
			e.t.Fatalf("scan: %v", err)
		}
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		regions := rec.Column(rec.Schema().FieldIndices("region")[0]).(*array.String)
		for i := 0; i < ids.Len(); i++ {
			out[ids.Value(i)] = regions.Value(i)
		}
		rec.Release()
	}
	return out
}

// requireRows fails unless the live rows are exactly want's ids, each in
// its region.
func (e *env) requireRows(want map[int64]string, when string) {
	e.t.Helper()
	got := e.regionByID()
	if maps.Equal(got, want) {
		return
	}
	var extra, missing []int64
	for id := range got {
		if _, ok := want[id]; !ok {
			extra = append(extra, id)
		}
	}
	for id := range want {
		if _, ok := got[id]; !ok {
			missing = append(missing, id)
		}
	}
	slices.Sort(extra)
	slices.Sort(missing)
	e.t.Fatalf("%s: %d rows, want %d; rows not deleted: %v; rows lost: %v", when, len(got), len(want), extra, missing)
}

// deleteByRegionAndTag commits one equality delete keyed by (region, tag),
// one key per region (a nil tag is null).
func (e *env) deleteByRegionAndTag(tagID int, regions []string, tags []*string) {
	e.t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, region := range regions {
		b.Field(0).(*array.StringBuilder).Append(region)
		if tags[i] == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*tags[i])
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	records := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	txn := e.load().NewTransaction()
	if err := txn.CommitEqualityDeletes(e.ctx, []int{2, tagID}, iter.Seq2[arrow.RecordBatch, error](records), nil); err != nil {
		e.t.Fatalf("equality delete: %v", err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Fatalf("commit equality delete: %v", err)
	}
}
