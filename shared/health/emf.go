package health

import "github.com/icekeeper/icekeeper/shared/metrics"

// Metric names of Report.Metrics, written by the planner as EMF, one line
// per assessed table (the table in the record's Table member), in the
// Icekeeper namespace. Only HealthScore, SmallFiles and DeleteFiles are
// published as CloudWatch metrics, aggregated over the tables (the
// dashboard graphs the worst table's); the others are values of the log
// record only (metrics.LogOnly), which CloudWatch Logs Insights and the
// dashboard's per-table table read, and the health report holds them all:
// a gauge per table and name would be one custom metric per table each.
const (
	MetricDataFiles                = "DataFiles"
	MetricSmallFiles               = "SmallFiles"
	MetricAvgFileBytes             = "AvgFileBytes"
	MetricDeleteFiles              = "DeleteFiles"
	MetricPositionDeleteFiles      = "PositionDeleteFiles"
	MetricDeletionVectors          = "DeletionVectors"
	MetricEqualityDeleteFiles      = "EqualityDeleteFiles"
	MetricDeletedRowRatio          = "DeletedRowRatio"
	MetricSnapshots                = "Snapshots"
	MetricManifests                = "Manifests"
	MetricMetadataBytes            = "MetadataBytes"
	MetricOldestSnapshotAgeSeconds = "OldestSnapshotAgeSeconds"
	MetricHealthScore              = "HealthScore"
	// The table's first sort column's layout (published when the table
	// has a sort order and its files have bounds on it): the overlap
	// depth of its deepest partition, and the files a point lookup opens.
	MetricSortColumnOverlapDepth = "SortColumnOverlapDepth"
	MetricSortColumnLookupFiles  = "SortColumnLookupFiles"
)

// Metrics are the table-level health gauges of the report, with their
// CloudWatch units and publication (see the constants above): file counts as Count, sizes as Bytes, the oldest
// snapshot's age as Seconds, the deleted-row ratio (0 to 1) and the score
// (0 to 100) as None; and, for a table with a sort order, its first sort
// column's overlap depth (Count) and files per point lookup (None).
// Per-partition and per-column values are not published (their
// cardinality is unbounded); they stay in the JSON report.
//
//	em.Emit(map[string]string{metrics.TableDimension: r.Table, "Function": "planner"}, r.Metrics()...)
func (r Report) Metrics() []metrics.Metric {
	ms := []metrics.Metric{
		{Name: MetricDataFiles, Value: float64(r.DataFiles), Unit: metrics.Count, Publish: metrics.LogOnly},
		{Name: MetricSmallFiles, Value: float64(r.SmallFiles), Unit: metrics.Count},
		{Name: MetricAvgFileBytes, Value: float64(r.AvgFileBytes), Unit: metrics.Bytes, Publish: metrics.LogOnly},
		{Name: MetricDeleteFiles, Value: float64(r.DeleteFiles), Unit: metrics.Count},
		{Name: MetricPositionDeleteFiles, Value: float64(r.PositionDeleteFiles), Unit: metrics.Count, Publish: metrics.LogOnly},
		{Name: MetricDeletionVectors, Value: float64(r.DeletionVectors), Unit: metrics.Count, Publish: metrics.LogOnly},
		{Name: MetricEqualityDeleteFiles, Value: float64(r.EqualityDeleteFiles), Unit: metrics.Count, Publish: metrics.LogOnly},
		{Name: MetricDeletedRowRatio, Value: r.DeletedRowRatio, Unit: metrics.None, Publish: metrics.LogOnly},
		{Name: MetricSnapshots, Value: float64(r.Snapshots), Unit: metrics.Count, Publish: metrics.LogOnly},
		{Name: MetricManifests, Value: float64(r.Manifests()), Unit: metrics.Count, Publish: metrics.LogOnly},
		{Name: MetricMetadataBytes, Value: float64(r.MetadataBytes), Unit: metrics.Bytes, Publish: metrics.LogOnly},
		{Name: MetricOldestSnapshotAgeSeconds, Value: float64(r.OldestSnapshotAgeSeconds), Unit: metrics.Seconds, Publish: metrics.LogOnly},
		{Name: MetricHealthScore, Value: r.Score, Unit: metrics.None},
	}
	for _, c := range r.Columns {
		if r.SortColumn != "" && c.Column == r.SortColumn {
			ms = append(ms,
				metrics.Metric{Name: MetricSortColumnOverlapDepth, Value: float64(c.OverlapDepth), Unit: metrics.Count, Publish: metrics.LogOnly},
				metrics.Metric{Name: MetricSortColumnLookupFiles, Value: c.PointLookupFiles, Unit: metrics.None, Publish: metrics.LogOnly})
		}
	}
	return ms
}
