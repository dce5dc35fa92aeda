package health

import "github.com/icekeeper/icekeeper/shared/metrics"

// Metric names of Report.Metrics, published by the planner as EMF with the
// dimension "Table" in the Icekeeper namespace.
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
// CloudWatch units: file counts as Count, sizes as Bytes, the oldest
// snapshot's age as Seconds, the deleted-row ratio (0 to 1) and the score
// (0 to 100) as None; and, for a table with a sort order, its first sort
// column's overlap depth (Count) and files per point lookup (None).
// Per-partition and per-column values are not published (their
// cardinality is unbounded); they stay in the JSON report.
//
//	em.Emit(map[string]string{"Table": r.Table}, r.Metrics()...)
func (r Report) Metrics() []metrics.Metric {
	ms := []metrics.Metric{
		{Name: MetricDataFiles, Value: float64(r.DataFiles), Unit: metrics.Count},
		{Name: MetricSmallFiles, Value: float64(r.SmallFiles), Unit: metrics.Count},
		{Name: MetricAvgFileBytes, Value: float64(r.AvgFileBytes), Unit: metrics.Bytes},
		{Name: MetricDeleteFiles, Value: float64(r.DeleteFiles), Unit: metrics.Count},
		{Name: MetricPositionDeleteFiles, Value: float64(r.PositionDeleteFiles), Unit: metrics.Count},
		{Name: MetricDeletionVectors, Value: float64(r.DeletionVectors), Unit: metrics.Count},
		{Name: MetricEqualityDeleteFiles, Value: float64(r.EqualityDeleteFiles), Unit: metrics.Count},
		{Name: MetricDeletedRowRatio, Value: r.DeletedRowRatio, Unit: metrics.None},
		{Name: MetricSnapshots, Value: float64(r.Snapshots), Unit: metrics.Count},
		{Name: MetricManifests, Value: float64(r.Manifests()), Unit: metrics.Count},
		{Name: MetricMetadataBytes, Value: float64(r.MetadataBytes), Unit: metrics.Bytes},
		{Name: MetricOldestSnapshotAgeSeconds, Value: float64(r.OldestSnapshotAgeSeconds), Unit: metrics.Seconds},
		{Name: MetricHealthScore, Value: r.Score, Unit: metrics.None},
	}
	for _, c := range r.Columns {
		if r.SortColumn != "" && c.Column == r.SortColumn {
			ms = append(ms,
				metrics.Metric{Name: MetricSortColumnOverlapDepth, Value: float64(c.OverlapDepth), Unit: metrics.Count},
				metrics.Metric{Name: MetricSortColumnLookupFiles, Value: c.PointLookupFiles, Unit: metrics.None})
		}
	}
	return ms
}
