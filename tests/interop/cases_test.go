package interop

import (
	"fmt"
	"strings"
	"testing"
)

// A tableCase is a table written the way users write it, by Spark SQL or
// Iceberg Java's API.
type tableCase struct {
	// feature is the matrix row's name.
	feature string
	// subset: make test runs it (make interop runs every case).
	subset bool
	// write creates and fills the table.
	write func(w *world)
	// more writes again after icekeeper's jobs (Spark or Iceberg Java),
	// before icekeeper compacts once more; nil: an append and a MERGE.
	more func(w *world)
}

// maintained are the table properties every case sets: the owner's
// opt-in, orphan cleanup, and a retention that makes every snapshot but
// the current one (and those refs keep) due for expiry.
const maintained = `'icekeeper.maintenance.enabled'='true', 'icekeeper.orphans.enabled'='true',
	'history.expire.min-snapshots-to-keep'='1', 'history.expire.max-snapshot-age-ms'='1'`

// mergeOnRead makes Spark's DELETE, UPDATE and MERGE write deletes
// (position deletes on v2, deletion vectors on v3) instead of copying.
const mergeOnRead = `'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'`

// events is the common table shape: id, a category, a timestamp, a name
// and a value.
const eventsColumns = "id bigint, category string, ts timestamp, name string, value double"

// insertEvents appends rows [from, to) in several small commits, so the
// table has small files to compact.
func insertEvents(w *world, from, to, commits int) {
	w.t.Helper()
	step := (to - from) / commits
	for i := range commits {
		lo, hi := from+i*step, from+(i+1)*step
		if i == commits-1 {
			hi = to
		}
		w.sql(`INSERT INTO {t} SELECT id, concat('c', CAST(id %% 3 AS string)),
			timestamp_seconds(1704067200 + (id %% 4) * 86400 + id), concat('name-', CAST(id AS string)), id * 1.5
			FROM range(%d, %d)`, lo, hi)
	}
}

// rowLevelChanges runs Spark's DELETE, UPDATE and MERGE INTO on the events.
func rowLevelChanges(w *world) {
	w.t.Helper()
	w.sql("DELETE FROM {t} WHERE id %% 7 = 0")
	w.sql("UPDATE {t} SET value = value + 1000, name = concat(name, '-u') WHERE id %% 5 = 0")
	w.sql(`MERGE INTO {t} AS t USING (SELECT id, concat('c', CAST(id %% 3 AS string)) AS category,
			timestamp_seconds(1704067200 + (id %% 4) * 86400 + id) AS ts, concat('merged-', CAST(id AS string)) AS name, -1.0 * id AS value
			FROM range(0, 400, 11)) AS s
		ON t.id = s.id
		WHEN MATCHED AND s.id %% 2 = 0 THEN DELETE
		WHEN MATCHED THEN UPDATE SET *
		WHEN NOT MATCHED THEN INSERT *`)
}

func morTable(version int, partitionBy string) func(w *world) {
	return func(w *world) {
		w.sql("CREATE TABLE {t} (%s) USING iceberg %s TBLPROPERTIES ('format-version'='%d', %s, %s)",
			eventsColumns, partitionBy, version, mergeOnRead, maintained)
		insertEvents(w, 0, 300, 6)
		rowLevelChanges(w)
	}
}

// moreWrites is what a case's writers do after icekeeper's jobs by default:
// an append, a MERGE and a column added by Spark's DDL.
func moreWrites(w *world) {
	w.t.Helper()
	insertEvents(w, 1000, 1100, 3)
	w.sql(`MERGE INTO {t} AS t USING (SELECT id FROM range(1000, 1100, 3)) AS s ON t.id = s.id
		WHEN MATCHED THEN UPDATE SET t.value = -2.0`)
	w.sql("DELETE FROM {t} WHERE id %% 13 = 0")
}

// equalityDeletes writes equality deletes on id with Iceberg Java's API,
// as Flink's upsert does, for every id in ids.
func equalityDeletes(w *world, global bool, ids ...int) {
	w.t.Helper()
	var rows []map[string]any
	for _, id := range ids {
		rows = append(rows, map[string]any{
			"id": id, "category": fmt.Sprintf("c%d", id%3),
			"ts": fmt.Sprintf("2024-01-%02dT00:00:%02dZ", 1+id%4, 0) , "name": fmt.Sprintf("name-%d", id),
		})
	}
	w.spark(map[string]any{"op": "eqdelete", "catalog": w.name, "table": "db.t", "columns": []string{"id"}, "rows": rows, "global": global})
}

var cases = []tableCase{
	{feature: "Spark MoR DELETE/UPDATE/MERGE, v2, identity partitions", subset: true, write: morTable(2, "PARTITIONED BY (category)")},
	{feature: "Spark MoR DELETE/UPDATE/MERGE, v3 deletion vectors, days()", subset: true, write: morTable(3, "PARTITIONED BY (days(ts))")},
	{feature: "Spark MoR, v2, bucket()", write: morTable(2, "PARTITIONED BY (bucket(4, id))")},
	{feature: "Spark MoR, v3, truncate()", write: morTable(3, "PARTITIONED BY (truncate(6, name))")},
	{feature: "Iceberg Java equality deletes, partitioned", subset: true, write: func(w *world) {
		w.sql("CREATE TABLE {t} (%s) USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', %s)", eventsColumns, maintained)
		insertEvents(w, 0, 300, 6)
		equalityDeletes(w, false, 3, 4, 5, 30, 31, 32, 299)
		insertEvents(w, 300, 360, 2)
	}},
	{feature: "Iceberg Java equality deletes, global (unpartitioned)", write: func(w *world) {
		w.sql("CREATE TABLE {t} (%s) USING iceberg TBLPROPERTIES ('format-version'='2', %s)", eventsColumns, maintained)
		insertEvents(w, 0, 300, 6)
		equalityDeletes(w, true, 1, 2, 100, 101, 250)
		insertEvents(w, 300, 360, 2)
	}},
}

func TestInterop_TablesSparkAndJavaWroteKeepEveryRowUnderEveryAction(t *testing.T) {
	for _, c := range cases {
		if !c.subset && !runAll() {
			continue
		}
		for _, kind := range []string{kindJDBC} {
			t.Run(strings.ReplaceAll(c.feature, " ", "_")+"/"+kind, func(t *testing.T) {
				w := newWorld(t, kind)
				c.write(w)
				var outs []outcome
				for _, a := range everyAction {
					outs = append(outs, w.maintain(a))
				}
				more := c.more
				if more == nil {
					more = moreWrites
				}
				more(w)
				again := w.maintain(compact)
				again.Action = "compact after more writes"
				outs = append(outs, again)
				record(t, c.feature, kind, outs)
				for _, o := range outs {
					if o.Result == resultDamaged {
						t.Errorf("%s", o)
					}
				}
			})
		}
	}
}
