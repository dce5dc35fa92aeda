package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/binpack"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// Table properties read by ThresholdsFor, besides
// table.WriteTargetFileSizeBytesKey and table.GCEnabledKey.
const (
	// MinSnapshotsToKeepKey is Iceberg's history.expire.min-snapshots-to-keep.
	MinSnapshotsToKeepKey = expire.MinSnapshotsToKeepKey
	// MaxSnapshotAgeMsKey is Iceberg's history.expire.max-snapshot-age-ms.
	MaxSnapshotAgeMsKey = expire.MaxSnapshotAgeMsKey
)

// Defaults of the thresholds no table property sets.
const (
	// DefaultMinInputFiles is iceberg-go's compaction.DefaultMinInputFiles.
	DefaultMinInputFiles = int(compaction.DefaultMinInputFiles)
	// DefaultFileCountGoal: a partition holding twice its optimal file
	// count has its small files compacted below DefaultMinInputFiles, so
	// that it stays within twice (issue 34's goal for a maintained table).
	DefaultFileCountGoal = 2
	// DefaultDeleteRatio is iceberg-go's compaction.DefaultDeleteRatioThreshold.
	DefaultDeleteRatio = compaction.DefaultDeleteRatioThreshold
	// DefaultMaxManifests is the number of data manifests in the current
	// snapshot above which a manifest rewrite is recommended: Iceberg's
	// commit.manifest.min-count-to-merge default (100), the count at which
	// Iceberg's own merging appends start to merge manifests. A table kept
	// below it plans scans from few, large manifests.
	DefaultMaxManifests = table.ManifestMinMergeCountDefault
	// DefaultMaxSnapshots is Iceberg's history.expire.min-snapshots-to-keep
	// default.
	DefaultMaxSnapshots = table.MinSnapshotsToKeepDefault
	// DefaultMaxSnapshotAge is Iceberg's history.expire.max-snapshot-age-ms
	// default (5 days).
	DefaultMaxSnapshotAge = time.Duration(table.MaxSnapshotAgeMsDefault) * time.Millisecond
)

// ErrInvalidThresholds reports thresholds or table properties that cannot be
// used (a malformed property, a non-positive size). Not retryable: the table
// property must be fixed.
var ErrInvalidThresholds = errors.New("health: invalid thresholds")

// Thresholds decide what counts as debt and when an action is recommended.
// Build them with ThresholdsFor (from the table's properties) and adjust
// fields if needed; Assess validates them.
type Thresholds struct {
	// TargetFileSize is the size compaction writes
	// (write.target-file-size-bytes, or icekeeper's override).
	TargetFileSize int64 `json:"target_file_size_bytes"`
	// SmallFileBytes: a data file smaller than this is small. Default 75% of
	// TargetFileSize, iceberg-go's compaction planner's MinFileSizeBytes.
	SmallFileBytes int64 `json:"small_file_bytes"`
	// MinInputFiles: compaction rewrites a partition only if it has at least
	// this many candidate files (small, or over DeleteRatio).
	MinInputFiles int `json:"min_input_files"`
	// FileCountGoal: a partition holding this many times its optimal
	// file count, or more, has its small files compacted even when they are
	// fewer than MinInputFiles (binpack.Rules). Zero when the owner set
	// the table's min-input-files: theirs stands.
	FileCountGoal int `json:"file_count_goal,omitempty"`
	// DeleteRatio: a data file whose file-scoped deletes (deletion vectors,
	// position deletes that target only it) cover at least this fraction of
	// its rows is rewritten regardless of size. 0 disables the rule.
	DeleteRatio float64 `json:"delete_ratio"`
	// MaxSnapshots is the number of newest snapshots of each branch that are
	// kept whatever their age (history.expire.min-snapshots-to-keep): older
	// ones beyond it count as expirable once older than MaxSnapshotAge.
	MaxSnapshots int `json:"max_snapshots"`
	// MaxSnapshotAge is the age beyond which a snapshot may be expired
	// (history.expire.max-snapshot-age-ms).
	MaxSnapshotAge time.Duration `json:"-"`
	// MaxRefAge is the age beyond which a branch or tag other than main is
	// removed by an expiry (history.expire.max-ref-age-ms; never by
	// default).
	MaxRefAge time.Duration `json:"-"`
	// MaxManifests is the number of data manifests in the current snapshot
	// above which a manifest rewrite is recommended: the table's
	// commit.manifest.min-count-to-merge (default DefaultMaxManifests).
	MaxManifests int `json:"max_manifests"`
	// GCEnabled is the table's gc.enabled: when false, files may be shared
	// with other tables, so neither expiry nor orphan cleanup is recommended.
	GCEnabled bool `json:"gc_enabled"`
	// HotIdle and HotMinFiles are the active-write scoping of compaction
	// (icekeeper.compaction.hot-partition.idle-time, 0: off, and
	// .min-files; see hot.go).
	HotIdle     time.Duration `json:"-"`
	HotMinFiles int           `json:"hot_partition_min_files,omitempty"`
	// HotMinFileAge: in a hot partition, only data files added longer ago
	// are compaction candidates (icekeeper.compaction.hot-partition.min-file-age,
	// 0: off; ScopeYoung).
	HotMinFileAge time.Duration `json:"-"`
}

// thresholdsJSON is Thresholds' JSON form: the age in milliseconds, as the
// table property.
type thresholdsJSON struct {
	thresholdsAlias
	MaxSnapshotAgeMs int64 `json:"max_snapshot_age_ms"`
	MaxRefAgeMs      int64 `json:"max_ref_age_ms"`
	HotIdleMs        int64 `json:"hot_partition_idle_ms,omitempty"`
	HotMinFileAgeMs  int64 `json:"hot_partition_min_file_age_ms,omitempty"`
}

type thresholdsAlias Thresholds

// MarshalJSON encodes MaxSnapshotAge as max_snapshot_age_ms.
func (th Thresholds) MarshalJSON() ([]byte, error) {
	return json.Marshal(thresholdsJSON{thresholdsAlias(th), th.MaxSnapshotAge.Milliseconds(), th.MaxRefAge.Milliseconds(), th.HotIdle.Milliseconds(), th.HotMinFileAge.Milliseconds()})
}

// UnmarshalJSON decodes what MarshalJSON writes.
func (th *Thresholds) UnmarshalJSON(b []byte) error {
	var v thresholdsJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*th = Thresholds(v.thresholdsAlias)
	th.MaxSnapshotAge = time.Duration(v.MaxSnapshotAgeMs) * time.Millisecond
	th.MaxRefAge = expire.DurationMs(v.MaxRefAgeMs)
	th.HotIdle = time.Duration(v.HotIdleMs) * time.Millisecond
	th.HotMinFileAge = time.Duration(v.HotMinFileAgeMs) * time.Millisecond
	return nil
}

// ThresholdsFor derives the thresholds from a table's properties:
// write.target-file-size-bytes (default table.WriteTargetFileSizeBytesDefault;
// targetOverride > 0 replaces it, as ICEKEEPER_TARGET_FILE_SIZE_BYTES does),
// history.expire.min-snapshots-to-keep and history.expire.max-snapshot-age-ms
// (Iceberg defaults 1 and 5 days; their legacy unprefixed spellings are
// honoured as iceberg-go does), gc.enabled (default true) and
// icekeeper.compaction.min-input-files (default 5, Iceberg's; when the
// owner sets it, FileCountGoal is off). The other
// thresholds take their documented defaults. A malformed property is an
// error wrapping ErrInvalidThresholds that names it.
func ThresholdsFor(props map[string]string, targetOverride int64) (Thresholds, error) {
	th := Thresholds{
		TargetFileSize: table.WriteTargetFileSizeBytesDefault,
		MinInputFiles:  DefaultMinInputFiles,
		FileCountGoal:  DefaultFileCountGoal,
		DeleteRatio:    DefaultDeleteRatio,
		MaxSnapshots:   DefaultMaxSnapshots,
		MaxSnapshotAge: DefaultMaxSnapshotAge,
		MaxRefAge:      time.Duration(1<<63 - 1),
		MaxManifests:   DefaultMaxManifests,
		GCEnabled:      table.GCEnabledDefault,
	}
	if targetOverride < 0 {
		return th, fmt.Errorf("%w: target file size override %d: want a positive number of bytes (0: the table's)", ErrInvalidThresholds, targetOverride)
	}
	if v, ok := property(props, table.WriteTargetFileSizeBytesKey); ok {
		n, err := positiveInt(table.WriteTargetFileSizeBytesKey, v)
		if err != nil {
			return th, err
		}
		th.TargetFileSize = n
	}
	if targetOverride > 0 {
		th.TargetFileSize = targetOverride
	}
	th.SmallFileBytes = th.TargetFileSize * 3 / 4
	ret, err := expire.RetentionFor(props)
	if err != nil {
		return th, fmt.Errorf("%w: %w", ErrInvalidThresholds, err)
	}
	th.MaxSnapshots, th.MaxSnapshotAge, th.MaxRefAge = ret.MinSnapshotsToKeep, ret.MaxSnapshotAge, ret.MaxRefAge
	if v, ok := property(props, table.ManifestMinMergeCountKey); ok {
		n, err := positiveInt(table.ManifestMinMergeCountKey, v)
		if err != nil {
			return th, err
		}
		th.MaxManifests = int(min(n, 1<<31-1))
	}
	if th.MinInputFiles, err = optin.CompactionMinInputFiles(props, th.MinInputFiles); err != nil {
		return th, fmt.Errorf("%w: %w", ErrInvalidThresholds, err)
	}
	if _, set := property(props, optin.PropertyCompactionMinInputFiles); set {
		th.FileCountGoal = 0
	}
	idle, minFiles, err := optin.HotPartitions(props)
	if err != nil {
		return th, fmt.Errorf("%w: %w", ErrInvalidThresholds, err)
	}
	if idle > 0 {
		th.HotIdle, th.HotMinFiles = idle, minFiles
		if th.HotMinFileAge, err = optin.HotPartitionMinFileAge(props); err != nil {
			return th, fmt.Errorf("%w: %w", ErrInvalidThresholds, err)
		}
	}
	if v, ok := property(props, table.GCEnabledKey); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return th, fmt.Errorf("%w: table property %s=%q: want true or false", ErrInvalidThresholds, table.GCEnabledKey, v)
		}
		th.GCEnabled = b
	}
	return th, th.Validate()
}

func property(props map[string]string, key string) (string, bool) {
	v, ok := props[key]
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

func positiveInt(key, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: table property %s=%q: want a positive integer", ErrInvalidThresholds, key, v)
	}
	return n, nil
}

// Validate reports the first threshold that cannot be used, naming it.
func (th Thresholds) Validate() error {
	switch {
	case th.TargetFileSize <= 0:
		return fmt.Errorf("%w: TargetFileSize %d: want > 0", ErrInvalidThresholds, th.TargetFileSize)
	case th.SmallFileBytes < 0 || th.SmallFileBytes > th.TargetFileSize:
		return fmt.Errorf("%w: SmallFileBytes %d: want between 0 and TargetFileSize (%d)", ErrInvalidThresholds, th.SmallFileBytes, th.TargetFileSize)
	case th.MinInputFiles < 1:
		return fmt.Errorf("%w: MinInputFiles %d: want >= 1", ErrInvalidThresholds, th.MinInputFiles)
	case th.DeleteRatio < 0 || th.DeleteRatio > 1:
		return fmt.Errorf("%w: DeleteRatio %g: want within [0,1]", ErrInvalidThresholds, th.DeleteRatio)
	case th.MaxSnapshots < 1:
		return fmt.Errorf("%w: MaxSnapshots %d: want >= 1", ErrInvalidThresholds, th.MaxSnapshots)
	case th.MaxSnapshotAge <= 0:
		return fmt.Errorf("%w: MaxSnapshotAge %s: want > 0", ErrInvalidThresholds, th.MaxSnapshotAge)
	case th.MaxManifests < 1:
		return fmt.Errorf("%w: MaxManifests %d: want >= 1", ErrInvalidThresholds, th.MaxManifests)
	}
	return nil
}

// CompactionConfig is iceberg-go's compaction planner configuration for
// these thresholds: the target, SmallFileBytes as MinFileSizeBytes, 180% of
// the target as MaxFileSizeBytes (iceberg-go's default), MinInputFiles and
// DeleteRatio; the other settings are iceberg-go's defaults. With default
// thresholds it equals the planner's configuration.
func (th Thresholds) CompactionConfig() compaction.Config {
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = th.TargetFileSize
	cfg.MinFileSizeBytes = th.SmallFileBytes
	cfg.MaxFileSizeBytes = th.TargetFileSize * 9 / 5
	cfg.MinInputFiles = uint(th.MinInputFiles)
	cfg.DeleteRatioThreshold = th.DeleteRatio
	return cfg
}

// CompactionRules are the planner's rules beyond iceberg-go's for these
// thresholds (binpack.PlanInto).
func (th Thresholds) CompactionRules() binpack.Rules {
	return binpack.Rules{FileCountGoal: th.FileCountGoal}
}
