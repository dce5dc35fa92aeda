// Package health measures a table's maintenance debt from its metadata and
// says what to do about it.
//
// Measure counts the live files of the current snapshot (the demo's
// before/after report). Assess builds the full health Report of issue 3:
// per table and per partition the data files, small files, average file
// size, delete files and deleted rows by kind and the deleted-row ratio;
// snapshots, manifests, metadata size and oldest snapshot age; a Score; and
// Recommendations (compaction, snapshot expiry, manifest rewrite), each with
// the reason and the bytes and files it would touch. Report.Metrics turns a
// report into the CloudWatch gauges the planner publishes as EMF lines (see
// package metrics). Report.AddOrphans adds the orphan-cleanup
// recommendation from what package orphans found (orphans.Find, an explicit
// opt-in, lists the table location). Unchanged tells the planner whether a
// new report says anything the published one did not, but for the fields
// that move with the clock alone (it rewrites an unchanged one daily).
//
// Invariants:
//
//   - Read-only. Assess reads the metadata file (its size, through the
//     table's FileIO), the manifest lists and the manifests, and nothing
//     else: no data or delete file is opened, nothing is written, no commit
//     is made.
//   - Thresholds come from the table's properties exactly as iceberg-go and
//     Iceberg read them (ThresholdsFor), so the compaction estimate is
//     iceberg-go's compaction plan with the planner's own settings
//     (Thresholds.CompactionConfig): what the planner would rewrite.
//   - The Score depends on metadata only (never on the orphan listing), so
//     it is comparable between runs with and without --orphans.
package health
