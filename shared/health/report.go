package health

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/binpack"
)

// Actions a Recommendation names.
const (
	ActionCompaction       = "compaction"
	ActionExpireSnapshots  = "expire_snapshots"
	ActionRewriteManifests = "rewrite_manifests"
	ActionRemoveOrphans    = "remove_orphans"
	// ActionSort: the table's files are not clustered on its first sort
	// column (ColumnOverlap). Advisory: icekeeper's compaction does not
	// sort yet.
	ActionSort = "sort"
)

// Actions lists every action, in the order recommendations are listed.
func Actions() []string {
	return []string{ActionCompaction, ActionExpireSnapshots, ActionRewriteManifests, ActionRemoveOrphans, ActionSort}
}

// Unpartitioned is the partition name of files written with an
// unpartitioned spec.
const Unpartitioned = "unpartitioned"

// Recommendation is one maintenance action worth running, why, and an
// estimate of what it would touch (see Assess for how each is estimated).
type Recommendation struct {
	Action         string `json:"action"`
	Why            string `json:"why"`
	EstimatedBytes int64  `json:"estimated_bytes"`
	EstimatedFiles int    `json:"estimated_files"`
}

// FileStats are the live files of one partition, or of the whole table, at
// the assessed snapshot, from the manifests' entries.
//
// Record counts come from the manifests and count rows written, not live
// rows. Delete rows are the delete files' record counts: for position delete
// files and deletion vectors these are exact deleted positions (a position
// deleted twice, by two position delete files, counts twice; a delete whose
// data file is gone still counts); for equality delete files they are the
// rows of the delete files, i.e. delete keys, which may match any number of
// data rows.
type FileStats struct {
	DataFiles      int   `json:"data_files"`
	DataBytes      int64 `json:"data_bytes"`
	Records        int64 `json:"records"`
	AvgFileBytes   int64 `json:"avg_file_bytes"`
	SmallFiles     int   `json:"small_files"`
	SmallFileBytes int64 `json:"small_file_bytes"`
	// FilesOverDeleteRatio are data files whose file-scoped deletes cover
	// at least Thresholds.DeleteRatio of their rows (compaction rewrites
	// them whatever their size).
	FilesOverDeleteRatio int   `json:"files_over_delete_ratio"`
	DeleteFiles          int   `json:"delete_files"`
	DeleteBytes          int64 `json:"delete_bytes"`
	PositionDeleteFiles  int   `json:"position_delete_files"`
	DeletionVectors      int   `json:"deletion_vectors"`
	EqualityDeleteFiles  int   `json:"equality_delete_files"`
	PositionDeleteRows   int64 `json:"position_delete_rows"`
	DeletionVectorRows   int64 `json:"deletion_vector_rows"`
	EqualityDeleteRows   int64 `json:"equality_delete_rows"`
	// SizeHistogram counts the data files by size: bucket i holds the files
	// below FileSizeBounds[i] and at least FileSizeBounds[i-1]; the last
	// one the files of 1 GiB and more.
	SizeHistogram []int `json:"size_histogram"`
	// DeletedRowRatio is (PositionDeleteRows + DeletionVectorRows) / Records,
	// clamped to [0,1]: the share of written rows known to be deleted by
	// position. Equality deletes are left out: their matches cannot be
	// counted from metadata.
	DeletedRowRatio float64 `json:"deleted_row_ratio"`
	// excessFiles is DataFiles minus the files the same bytes would need at
	// the target size (at least one), summed per partition (for Debt).
	excessFiles int
}

// FileSizeBounds are the upper bounds of SizeHistogram's buckets, powers
// of four from 16 KiB to 1 GiB.
var FileSizeBounds = []int64{16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30}

// sizeBucket is the SizeHistogram bucket of a file of n bytes.
func sizeBucket(n int64) int {
	for i, b := range FileSizeBounds {
		if n < b {
			return i
		}
	}
	return len(FileSizeBounds)
}

func (s *FileStats) add(df iceberg.DataFile, th Thresholds) {
	switch df.ContentType() {
	case iceberg.EntryContentData:
		if s.SizeHistogram == nil {
			s.SizeHistogram = make([]int, len(FileSizeBounds)+1)
		}
		s.SizeHistogram[sizeBucket(df.FileSizeBytes())]++
		s.DataFiles++
		s.DataBytes += df.FileSizeBytes()
		s.Records += df.Count()
		if df.FileSizeBytes() < th.SmallFileBytes {
			s.SmallFiles++
			s.SmallFileBytes += df.FileSizeBytes()
		}
	case iceberg.EntryContentEqDeletes:
		s.EqualityDeleteFiles++
		s.EqualityDeleteRows += df.Count()
		s.DeleteBytes += df.FileSizeBytes()
	case iceberg.EntryContentPosDeletes:
		if table.IsDeletionVector(df) {
			s.DeletionVectors++
			s.DeletionVectorRows += df.Count()
			// Several vectors may share one Puffin file: count the blob.
			if n := df.ContentSizeInBytes(); n != nil {
				s.DeleteBytes += *n
			} else {
				s.DeleteBytes += df.FileSizeBytes()
			}
		} else {
			s.PositionDeleteFiles++
			s.PositionDeleteRows += df.Count()
			s.DeleteBytes += df.FileSizeBytes()
		}
	}
}

// finish computes the derived fields.
func (s *FileStats) finish() {
	if s.SizeHistogram == nil {
		s.SizeHistogram = make([]int, len(FileSizeBounds)+1)
	}
	s.DeleteFiles = s.PositionDeleteFiles + s.DeletionVectors + s.EqualityDeleteFiles
	s.AvgFileBytes = 0
	if s.DataFiles > 0 {
		s.AvgFileBytes = s.DataBytes / int64(s.DataFiles)
	}
	s.DeletedRowRatio = 0
	if s.Records > 0 {
		s.DeletedRowRatio = math.Min(1, float64(s.PositionDeleteRows+s.DeletionVectorRows)/float64(s.Records))
	}
}

// countExcess sets excessFiles for a single partition.
func (s *FileStats) countExcess(th Thresholds) {
	s.excessFiles = 0
	if s.DataFiles > 0 {
		s.excessFiles = max(0, s.DataFiles-binpack.Optimum(s.DataBytes, th.TargetFileSize))
	}
}

// plus adds o's counts (not the derived fields) to s.
func (s *FileStats) plus(o FileStats) {
	if s.SizeHistogram == nil {
		s.SizeHistogram = make([]int, len(FileSizeBounds)+1)
	}
	for i, n := range o.SizeHistogram {
		s.SizeHistogram[i] += n
	}
	s.DataFiles += o.DataFiles
	s.DataBytes += o.DataBytes
	s.Records += o.Records
	s.SmallFiles += o.SmallFiles
	s.SmallFileBytes += o.SmallFileBytes
	s.FilesOverDeleteRatio += o.FilesOverDeleteRatio
	s.DeleteBytes += o.DeleteBytes
	s.PositionDeleteFiles += o.PositionDeleteFiles
	s.DeletionVectors += o.DeletionVectors
	s.EqualityDeleteFiles += o.EqualityDeleteFiles
	s.PositionDeleteRows += o.PositionDeleteRows
	s.DeletionVectorRows += o.DeletionVectorRows
	s.EqualityDeleteRows += o.EqualityDeleteRows
	s.excessFiles += o.excessFiles
}

// PartitionHealth is the health of one partition: its files, written with
// partition spec SpecID.
type PartitionHealth struct {
	// Partition reads like a Hive path without escaping, with the spec's
	// field names and human-readable values ("region=region-01",
	// "day=2026-01-02/bucket=3"), or Unpartitioned.
	Partition string `json:"partition"`
	SpecID    int    `json:"spec_id"`
	FileStats
	// Columns say, per top-level column with bounds, how well the
	// partition's data files are clustered on it.
	Columns []ColumnOverlap `json:"columns,omitempty"`

	overlaps *overlapCollector
}

// Debt is each component of the Score, each within [0,1].
type Debt struct {
	// Files is the share of data files that bin-packing would remove: per
	// partition, data files minus max(1, ceil(data bytes / target)), summed,
	// over all data files.
	Files float64 `json:"files"`
	// DeleteFiles is delete files / (data files + delete files).
	DeleteFiles float64 `json:"delete_files"`
	// DeletedRows is the table's DeletedRowRatio.
	DeletedRows float64 `json:"deleted_rows"`
	// Snapshots is expirable snapshots / snapshots.
	Snapshots float64 `json:"snapshots"`
	// Manifests is data manifests beyond MaxManifests / data manifests.
	Manifests float64 `json:"manifests"`
}

// Score weights of the Debt components; they add up to 100.
const (
	WeightFiles       = 25
	WeightDeleteFiles = 25
	WeightDeletedRows = 25
	WeightSnapshots   = 15
	WeightManifests   = 10
)

// Score is the weighted sum of the debt components, from 0 (healthy: files
// at the target size, no deletes, nothing to expire, few manifests) to 100,
// rounded to one decimal:
//
//	25*Files + 25*DeleteFiles + 25*DeletedRows + 15*Snapshots + 10*Manifests
//
// Read-time costs (small files, delete files, deleted rows) weigh most;
// snapshot and manifest debt slow planning and grow metadata. Orphan files
// only cost storage and are not part of it.
func (d Debt) Score() float64 {
	s := WeightFiles*d.Files + WeightDeleteFiles*d.DeleteFiles + WeightDeletedRows*d.DeletedRows +
		WeightSnapshots*d.Snapshots + WeightManifests*d.Manifests
	return math.Round(s*10) / 10
}

// Orphans are the files orphans.Find found.
type Orphans struct {
	Files     []string  `json:"files"`
	Bytes     int64     `json:"bytes"`
	OlderThan time.Time `json:"older_than"`
}

// Report is the health of one table at one snapshot (see Assess). The
// embedded FileStats are the table's totals.
type Report struct {
	Table            string     `json:"table"`
	SnapshotID       int64      `json:"snapshot_id,string"`
	MetadataLocation string     `json:"metadata_location"`
	GeneratedAt      time.Time  `json:"generated_at"`
	Thresholds       Thresholds `json:"thresholds"`
	FileStats
	Snapshots int `json:"snapshots"`
	// ExpirableSnapshots would be removed by expiring snapshots with the
	// table's retention (see Assess).
	ExpirableSnapshots int `json:"expirable_snapshots"`
	// DataManifests and DeleteManifests are the current snapshot's
	// manifests; ManifestBytes their total size, DataManifestBytes that of
	// the data manifests.
	DataManifests     int   `json:"data_manifests"`
	DeleteManifests   int   `json:"delete_manifests"`
	ManifestBytes     int64 `json:"manifest_bytes"`
	DataManifestBytes int64 `json:"data_manifest_bytes"`
	// MetadataBytes is the size of the current metadata file.
	MetadataBytes int64 `json:"metadata_bytes"`
	// PreviousMetadataFiles is the length of the metadata log.
	PreviousMetadataFiles    int        `json:"previous_metadata_files"`
	OldestSnapshotAt         *time.Time `json:"oldest_snapshot_at,omitempty"`
	OldestSnapshotAgeSeconds int64      `json:"oldest_snapshot_age_seconds"`
	// Partitions are sorted by Partition, then SpecID.
	Partitions      []PartitionHealth `json:"partitions"`
	Debt            Debt              `json:"debt"`
	Score           float64           `json:"score"`
	Recommendations []Recommendation  `json:"recommendations"`
	// Orphans is set by AddOrphans (the location was listed).
	Orphans *Orphans `json:"orphans,omitempty"`
	// HotPartitions are the partitions with files to compact that a writer
	// committed to within Thresholds.HotIdle, with what compaction does
	// about them (see hot.go); none when the scoping is off.
	HotPartitions []HotPartition `json:"hot_partitions,omitempty"`
	// CompactionPlanSkipped says why the snapshot's compaction plan was not
	// made (WithMemoryBudget): the report then has no compaction
	// recommendation and no files over the delete ratio, whatever the
	// table needs.
	CompactionPlanSkipped string `json:"compaction_plan_skipped,omitempty"`
	// Columns sum the partitions' ColumnOverlap per column: their files,
	// the deepest overlap of any partition, the point lookup's files
	// averaged over the partitions' files (partition pruning comes first,
	// so a partition is what a lookup searches), and OneValue when it holds
	// in every partition.
	Columns []ColumnOverlap `json:"columns,omitempty"`
	// Correlations are, per pair of those columns, how their values move
	// together across the files (package correlation): the query
	// signals' layout leaves out a second column redundant with the
	// first.
	Correlations []ColumnCorrelation `json:"correlations,omitempty"`
	// SortColumn is the table's first sort column, "" without a sort
	// order.
	SortColumn string `json:"sort_column,omitempty"`
}

// Manifests is the number of manifests of the current snapshot.
func (r Report) Manifests() int { return r.DataManifests + r.DeleteManifests }

// OldestSnapshotAge is the age of the oldest snapshot when the report was
// made (0 without snapshots).
func (r Report) OldestSnapshotAge() time.Duration {
	return time.Duration(r.OldestSnapshotAgeSeconds) * time.Second
}

// Recommends returns the recommendation for action, if any.
func (r Report) Recommends(action string) (Recommendation, bool) {
	for _, rec := range r.Recommendations {
		if rec.Action == action {
			return rec, true
		}
	}
	return Recommendation{}, false
}

// AddOrphans records what orphans.Find found (files older than olderThan,
// bytes in total) and, when there are some and the table's gc.enabled
// allows deleting files, recommends removing them. It leaves the Score as it
// is. Calling it again replaces the previous result.
func (r *Report) AddOrphans(files []string, bytes int64, olderThan time.Time) {
	r.Orphans = &Orphans{Files: append([]string{}, files...), Bytes: bytes, OlderThan: olderThan.UTC()}
	recs := r.Recommendations[:0:0]
	for _, rec := range r.Recommendations {
		if rec.Action != ActionRemoveOrphans {
			recs = append(recs, rec)
		}
	}
	if len(files) > 0 && r.Thresholds.GCEnabled {
		recs = append(recs, Recommendation{
			Action: ActionRemoveOrphans,
			Why: fmt.Sprintf("%d files (%s) under the table location are referenced by no snapshot and no metadata file, and are older than %s",
				len(files), FormatBytes(bytes), olderThan.UTC().Format(time.RFC3339)),
			EstimatedBytes: bytes,
			EstimatedFiles: len(files),
		})
	}
	r.Recommendations = recs
}

// sortPartitions orders partitions by name, then spec.
func sortPartitions(ps []PartitionHealth) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Partition != ps[j].Partition {
			return ps[i].Partition < ps[j].Partition
		}
		return ps[i].SpecID < ps[j].SpecID
	})
}

// byteString prints a size for a human (the Why texts).
// FormatBytes renders a size for people: "3.3 KiB", "1.0 GiB".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// listNames joins up to three names, then says how many more.
func listNames(names []string) string {
	sort.Strings(names)
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}
