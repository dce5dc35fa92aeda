package specproposal

import (
	"strings"
	"testing"
)

const mib = 1 << 20

// table is a table partitioned by day(ts) into 30 partitions of 2 GiB
// each, whose queries mostly look up single values of status (5 values,
// spread over every file).
func table() Table {
	return Table{
		Name: "shop.orders", Fields: []Field{{Name: "ts_day", Source: "ts", Transform: "day"}},
		Partitions: 30, DataBytes: 30 * 2048 * mib, DataFiles: 30 * 4, MedianPartitionBytes: 2048 * mib, TargetFileSize: 512 * mib,
		Queries: 100,
		Columns: []Column{
			{Name: "status", Queries: 80, PointShare: 1, BytesScanned: 800 * 1024 * mib, Values: 5, LookupFiles: 4},
			{Name: "id", Queries: 30, PointShare: 1, BytesScanned: 10 * mib, LookupFiles: 4},
		},
	}
}

func TestPropose_AddsAFieldOnASelectiveLowCardinalityColumn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(*Table)
		want   string // the SQL, "" for none
	}{
		{"status: 80% of the queries, single values of 5", func(*Table) {}, "ALTER TABLE shop.orders ADD PARTITION FIELD status"},
		{"too few queries", func(t *Table) { t.Queries, t.Columns[0].Queries = 10, 8 }, ""},
		{"a minority of the queries", func(t *Table) { t.Columns[0].Queries = 30 }, ""},
		{"ranges, not single values", func(t *Table) { t.Columns[0].PointShare = 0.3 }, ""},
		{"many values (unknown)", func(t *Table) { t.Columns[0].Values = 0 }, ""},
		{"one value", func(t *Table) { t.Columns[0].Values = 1 }, ""},
		{"already clustered: a lookup opens one file", func(t *Table) { t.Columns[0].LookupFiles = 1 }, ""},
		{"already a partition source", func(t *Table) {
			t.Fields = append(t.Fields, Field{Name: "status", Source: "status", Transform: "identity"})
		}, ""},
		{"the new partitions would be too small", func(t *Table) { t.MedianPartitionBytes = 1024 * mib }, ""},
	}
	for _, c := range cases {
		tb := table()
		c.mutate(&tb)
		var got string
		for _, p := range Propose(tb, DefaultRules) {
			if p.Change == "add" {
				got = p.SQL
				if !strings.Contains(p.Effect, "1/5") || p.ExpectedBytesSaved != 640*1024*mib {
					t.Errorf("%s: effect %q, saved %v; want a fifth read, 640 GiB saved", c.name, p.Effect, p.ExpectedBytesSaved)
				}
			}
		}
		if got != c.want {
			t.Errorf("%s: proposed %q; want %q", c.name, got, c.want)
		}
	}
}

func TestPropose_CoarsensTooManySmallPartitions(t *testing.T) {
	t.Parallel()
	small := func(fields ...Field) Table {
		return Table{Name: "logs.events", Fields: fields, Partitions: 720, DataBytes: 720 * 8 * mib, DataFiles: 720 * 3,
			MedianPartitionBytes: 8 * mib, TargetFileSize: 512 * mib}
	}
	cases := []struct {
		name  string
		table Table
		want  string
		files int
	}{
		{"hourly partitions of 8 MiB: daily", small(Field{Name: "ts_hour", Source: "ts", Transform: "hour"}), "ALTER TABLE logs.events REPLACE PARTITION FIELD ts_hour WITH day(ts)", 30},
		{"daily: monthly", small(Field{Name: "region", Source: "region", Transform: "identity"}, Field{Name: "ts_day", Source: "ts", Transform: "day"}), "ALTER TABLE logs.events REPLACE PARTITION FIELD ts_day WITH month(ts)", 24},
		{"buckets: drop the finest", small(Field{Name: "region", Source: "region", Transform: "identity"}, Field{Name: "id_bucket", Source: "id", Transform: "bucket[64]"}), "ALTER TABLE logs.events DROP PARTITION FIELD id_bucket", 12},
	}
	for _, c := range cases {
		ps := Propose(c.table, DefaultRules)
		if len(ps) != 1 || ps[0].SQL != c.want || ps[0].ExpectedFiles != c.files {
			t.Errorf("%s: %+v; want %q, %d files", c.name, ps, c.want, c.files)
		}
	}
	fine := small(Field{Name: "ts_hour", Source: "ts", Transform: "hour"})
	fine.MedianPartitionBytes = 256 * mib
	if ps := Propose(fine, DefaultRules); len(ps) != 0 {
		t.Errorf("partitions of half a target file: %+v; want none", ps)
	}
	few := small(Field{Name: "ts_hour", Source: "ts", Transform: "hour"})
	few.Partitions = 8
	if ps := Propose(few, DefaultRules); len(ps) != 0 {
		t.Errorf("8 partitions: %+v; want none", ps)
	}
}
