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
	// subset: make test runs it on the JDBC catalog, and restSubset on
	// the REST catalog too (make interop runs every case on both).
	subset, restSubset bool
	// write creates and fills the table.
	write func(w *world)
	// more writes again after icekeeper's jobs (Spark or Iceberg Java),
	// before icekeeper compacts once more; nil: an append and a MERGE.
	more func(w *world)
}

// maintained are the table properties every case sets: the owner's
// opt-in, orphan cleanup, and a retention that makes every snapshot but
// the current one (and those refs keep) due for expiry.
//
// The delete-file rewrite takes partitions with 2 or more delete files and
// the manifest rewrite tables with 3 or more manifests; Spark's own
// manifest merging is off, as streaming writers often set it, so that the
// writers' manifests are there for icekeeper to rewrite.
const maintained = `'icekeeper.maintenance.enabled'='true', 'icekeeper.orphans.enabled'='true',
	'history.expire.min-snapshots-to-keep'='1', 'history.expire.max-snapshot-age-ms'='1',
	'icekeeper.rewrite-deletes.min-input-files'='2',
	'commit.manifest-merge.enabled'='false', 'commit.manifest.min-count-to-merge'='3'`

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
	inCommits(from, to, commits, func(lo, hi int) {
		w.sql(`INSERT INTO {t} SELECT id, concat('c', CAST(id %% 3 AS string)),
			timestamp_seconds(1704067200 + (id %% 4) * 86400 + id), concat('name-', CAST(id AS string)), id * 1.5
			FROM range(%d, %d)`, lo, hi)
	})
}

// inCommits splits the ids [from, to) into commits ranges [lo, hi), the
// last taking the remainder, and calls insert on each in order.
func inCommits(from, to, commits int, insert func(lo, hi int)) {
	step := (to - from) / commits
	for i := range commits {
		lo, hi := from+i*step, from+(i+1)*step
		if i == commits-1 {
			hi = to
		}
		insert(lo, hi)
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
			"ts": fmt.Sprintf("2024-01-%02dT00:00:%02dZ", 1+id%4, 0), "name": fmt.Sprintf("name-%d", id),
		})
	}
	w.spark(map[string]any{"op": "eqdelete", "catalog": w.name, "table": "db.t", "columns": []string{"id"}, "rows": rows, "global": global})
}

var cases = []tableCase{
	{feature: "Spark MoR DELETE/UPDATE/MERGE, v2, identity partitions", subset: true, restSubset: true, write: morTable(2, "PARTITIONED BY (category)")},
	{feature: "Spark MoR DELETE/UPDATE/MERGE, v3 deletion vectors, days()", subset: true, write: morTable(3, "PARTITIONED BY (days(ts))")},
	{feature: "Spark MoR, v2, bucket()", write: morTable(2, "PARTITIONED BY (bucket(4, id))")},
	{feature: "Spark MoR, v3, truncate()", write: morTable(3, "PARTITIONED BY (truncate(6, name))")},
	{feature: "Iceberg Java equality deletes, partitioned", subset: true, restSubset: true, write: func(w *world) {
		w.sql("CREATE TABLE {t} (%s) USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', %s)", eventsColumns, maintained)
		insertEvents(w, 0, 300, 6)
		equalityDeletes(w, false, 3, 4, 5, 30, 31, 32, 299)
		insertEvents(w, 300, 360, 2)
	}, more: func(w *world) {
		insertEvents(w, 1000, 1060, 2)
		equalityDeletes(w, false, 7, 1000, 1001, 1003)
		w.sql("DELETE FROM {t} WHERE id %% 13 = 0")
	}},
	{feature: "Iceberg Java equality deletes, global (unpartitioned)", write: func(w *world) {
		w.sql("CREATE TABLE {t} (%s) USING iceberg TBLPROPERTIES ('format-version'='2', %s)", eventsColumns, maintained)
		insertEvents(w, 0, 300, 6)
		equalityDeletes(w, true, 1, 2, 100, 101, 250)
		insertEvents(w, 300, 360, 2)
	}, more: func(w *world) {
		insertEvents(w, 1000, 1060, 2)
		equalityDeletes(w, true, 8, 1000, 1002)
	}},
	{feature: "schema evolution by Spark DDL (add, rename, drop, re-add, int to bigint, struct field)", subset: true, write: evolvedSchema,
		more: func(w *world) {
			w.sql("ALTER TABLE {t} ADD COLUMN after_icekeeper int")
			w.sql("INSERT INTO {t} SELECT id, id, 'after', named_struct('a', 4, 'b', 'u', 'c', 'd'), 'h', 'v3', 1 FROM range(1000, 1040)")
			w.sql("UPDATE {t} SET after_icekeeper = 2 WHERE id %% 4 = 0")
		}},
	{feature: "decimals of every Parquet width (INT32, INT64, FIXED), widened by Spark DDL", subset: true, write: decimalTable,
		more: func(w *world) {
			insertDecimals(w, 1000, 1060, 2)
			w.sql("UPDATE {t} SET mid = mid * -1 WHERE id %% 4 = 0")
		}},
	{feature: "partition evolution (ADD/DROP PARTITION FIELD)", write: evolvedPartitions},
	{feature: "sort order by WRITE ORDERED BY", write: writeOrdered},
	{feature: "write.object-storage.enabled, zstd, gzip metadata", subset: true, write: withProperties(2,
		`'write.object-storage.enabled'='true', 'write.parquet.compression-codec'='zstd', 'write.metadata.compression-codec'='gzip'`)},
	{feature: "write.data.path and write.metadata.path elsewhere, snappy", write: withProperties(2,
		`'write.data.path'='file://{dir}/elsewhere/data', 'write.metadata.path'='file://{dir}/elsewhere/metadata', 'write.parquet.compression-codec'='snappy'`)},
	{feature: "format-version 2 to 3 with position deletes, gzip Parquet", write: upgradedToV3},
	{feature: "tags, a branch, rollback and cherry-pick by Spark", subset: true, write: refsRollbackCherryPick},
	{feature: "compute_table_stats and compute_partition_stats", write: withStatistics},
	{feature: "migrated from plain Parquet by add_files (name mapping)", write: migratedWithAddFiles, more: func(w *world) {
		w.sql("INSERT INTO {t} SELECT id, 'c9', 'later' FROM range(1000, 1050)")
		w.sql("DELETE FROM {t} WHERE id %% 11 = 0")
	}},
}

// decimalTable has decimals Iceberg Java stores as INT32 (precision up to
// 9), INT64 (up to 18) and FIXED_LEN_BYTE_ARRAY, negatives among them;
// one is widened from 7 to 12 digits after the first rows (INT32 files
// read as decimal(12,2), new rows in INT64), then some rows are deleted
// and updated.
func decimalTable(w *world) {
	w.sql(`CREATE TABLE {t} (id bigint, category string, small decimal(7,2), mid decimal(15,2), big decimal(30,4))
		USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', %s, %s)`, mergeOnRead, maintained)
	insertDecimals(w, 0, 200, 4)
	w.sql("ALTER TABLE {t} ALTER COLUMN small TYPE decimal(12,2)")
	insertDecimals(w, 200, 300, 2)
	w.sql("DELETE FROM {t} WHERE id %% 7 = 0")
	w.sql("UPDATE {t} SET big = -big, small = small + 0.01 WHERE id %% 5 = 0")
}

// insertDecimals appends rows [from, to) of decimalTable in several
// commits: values on both sides of zero, some near each precision's limit.
func insertDecimals(w *world, from, to, commits int) {
	w.t.Helper()
	inCommits(from, to, commits, func(lo, hi int) {
		w.sql(`INSERT INTO {t} SELECT id, concat('c', CAST(id %% 3 AS string)),
			CAST((id %% 300 - 150) * 333.33 AS decimal(7,2)),
			CAST((id - 150) * 6543210987.65 AS decimal(15,2)),
			CAST((id - 150) * 12345678901234567890.1234 AS decimal(30,4))
			FROM range(%d, %d)`, lo, hi)
	})
}

// evolvedSchema changes the schema every way Spark's DDL can, with rows
// written under each schema: add, rename, drop, re-add (a new field id
// under an old name), int to bigint, and a field added to a struct.
func evolvedSchema(w *world) {
	w.sql(`CREATE TABLE {t} (id bigint, n int, name string, value double, info struct<a: int, b: string>)
		USING iceberg PARTITIONED BY (bucket(2, id)) TBLPROPERTIES ('format-version'='2', %s, %s)`, mergeOnRead, maintained)
	ins := func(from, to int, cols string) {
		w.sql("INSERT INTO {t} %s FROM range(%d, %d)", cols, from, to)
	}
	ins(0, 60, "SELECT id, CAST(id AS int), concat('n', CAST(id AS string)), id * 0.5, named_struct('a', CAST(id AS int), 'b', 'x')")
	ins(60, 120, "SELECT id, CAST(id AS int), concat('n', CAST(id AS string)), id * 0.5, named_struct('a', CAST(id AS int), 'b', 'y')")
	w.sql("ALTER TABLE {t} ADD COLUMN extra string")
	ins(120, 180, "SELECT id, CAST(id AS int), concat('n', CAST(id AS string)), id * 0.5, named_struct('a', 1, 'b', 'z'), 'e'")
	w.sql("ALTER TABLE {t} RENAME COLUMN name TO label")
	w.sql("ALTER TABLE {t} DROP COLUMN value")
	w.sql("ALTER TABLE {t} ADD COLUMN value string")
	ins(180, 240, "SELECT id, CAST(id AS int), concat('l', CAST(id AS string)), named_struct('a', 2, 'b', 'w'), 'f', 'v'")
	w.sql("ALTER TABLE {t} ALTER COLUMN n TYPE bigint")
	w.sql("ALTER TABLE {t} ADD COLUMN info.c string")
	ins(240, 300, "SELECT id, id * 1000000000, concat('l', CAST(id AS string)), named_struct('a', 3, 'b', 'v', 'c', 'new'), 'g', 'v2'")
	w.sql("DELETE FROM {t} WHERE id %% 9 = 0")
	w.sql("UPDATE {t} SET label = 'updated' WHERE id %% 10 = 1")
}

// evolvedPartitions moves the table from identity partitions to days()
// and then drops the identity field, with rows under each spec.
func evolvedPartitions(w *world) {
	w.sql("CREATE TABLE {t} (%s) USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', %s, %s)",
		eventsColumns, mergeOnRead, maintained)
	insertEvents(w, 0, 120, 3)
	w.sql("ALTER TABLE {t} ADD PARTITION FIELD days(ts)")
	insertEvents(w, 120, 240, 3)
	w.sql("ALTER TABLE {t} DROP PARTITION FIELD category")
	insertEvents(w, 240, 360, 3)
	w.sql("DELETE FROM {t} WHERE id %% 7 = 0")
}

func writeOrdered(w *world) {
	w.sql("CREATE TABLE {t} (%s) USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', %s, %s)",
		eventsColumns, mergeOnRead, maintained)
	w.sql("ALTER TABLE {t} WRITE ORDERED BY id DESC, name")
	insertEvents(w, 0, 300, 6)
	w.sql("DELETE FROM {t} WHERE id %% 7 = 0")
}

// withProperties is a MoR table with the given extra table properties.
func withProperties(version int, props string) func(w *world) {
	return func(w *world) {
		props := strings.ReplaceAll(props, "{dir}", w.dir)
		w.sql("CREATE TABLE {t} (%s) USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='%d', %s, %s, %s)",
			eventsColumns, version, mergeOnRead, maintained, props)
		insertEvents(w, 0, 300, 6)
		rowLevelChanges(w)
	}
}

// upgradedToV3 has position deletes written on v2, then is upgraded to v3
// and gets deletion vectors.
func upgradedToV3(w *world) {
	w.sql("CREATE TABLE {t} (%s) USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', %s, %s, 'write.parquet.compression-codec'='gzip')",
		eventsColumns, mergeOnRead, maintained)
	insertEvents(w, 0, 300, 6)
	w.sql("DELETE FROM {t} WHERE id %% 7 = 0")
	w.sql("ALTER TABLE {t} SET TBLPROPERTIES ('format-version'='3')")
	insertEvents(w, 300, 400, 2)
	w.sql("DELETE FROM {t} WHERE id %% 11 = 0")
}

// refsRollbackCherryPick has a tag, a branch with its own commits, a
// rollback and a cherry-pick, all by Spark.
func refsRollbackCherryPick(w *world) {
	w.sql("CREATE TABLE {t} (%s) USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', %s, %s)",
		eventsColumns, mergeOnRead, maintained)
	insertEvents(w, 0, 100, 2)
	w.sql("ALTER TABLE {t} CREATE TAG release_1")
	insertEvents(w, 100, 200, 2)
	w.sql("ALTER TABLE {t} CREATE BRANCH audit")
	w.sql("INSERT INTO %s.db.t.branch_audit SELECT 100000 + id, 'audit', timestamp_seconds(1704067200), 'audit', 0.0 FROM range(0, 20)", w.name)
	w.sql("DELETE FROM %s.db.t.branch_audit WHERE id %% 3 = 0", w.name)
	beforeBad := w.mainSnapshot()
	insertEvents(w, 200, 260, 1)
	bad := w.mainSnapshot()
	w.sql("CALL %s.system.rollback_to_snapshot('db.t', %d)", w.name, beforeBad)
	insertEvents(w, 300, 360, 2)
	w.sql("CALL %s.system.cherrypick_snapshot('db.t', %d)", w.name, bad)
	w.sql("DELETE FROM {t} WHERE id %% 7 = 0")
	w.sql("ALTER TABLE {t} CREATE TAG after_cherry_pick")
}

// withStatistics has a Puffin statistics file (compute_table_stats) and a
// partition statistics file (compute_partition_stats).
func withStatistics(w *world) {
	w.sql("CREATE TABLE {t} (%s) USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', %s, %s)",
		eventsColumns, mergeOnRead, maintained)
	insertEvents(w, 0, 300, 6)
	w.sql("DELETE FROM {t} WHERE id %% 7 = 0")
	w.sql("CALL %s.system.compute_table_stats(table => 'db.t')", w.name)
	w.sql("CALL %s.system.compute_partition_stats(table => 'db.t')", w.name)
}

// migratedWithAddFiles is a table migrated from plain Parquet (files
// without field ids) with add_files, read through the name mapping
// add_files sets.
func migratedWithAddFiles(w *world) {
	src := "file://" + w.dir + "/legacy"
	w.sql(`INSERT OVERWRITE DIRECTORY '%s' USING parquet SELECT /*+ REPARTITION(6) */ id, concat('c', CAST(id %% 3 AS string)) AS category,
		concat('name-', CAST(id AS string)) AS name
		FROM range(0, 240)`, src)
	w.sql("CREATE TABLE {t} (id bigint, category string, name string) USING iceberg TBLPROPERTIES ('format-version'='2', %s, %s)", mergeOnRead, maintained)
	w.sql("CALL %s.system.add_files(table => 'db.t', source_table => '`parquet`.`%s`')", w.name, src)
	w.sql("DELETE FROM {t} WHERE id %% 7 = 0")
}

func TestInterop_TablesSparkAndJavaWroteKeepEveryRowUnderEveryAction(t *testing.T) {
	for _, c := range cases {
		if !c.subset && !runAll() {
			continue
		}
		for _, kind := range []string{kindJDBC, kindREST} {
			if kind == kindREST && !c.restSubset && !runAll() {
				continue
			}
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
