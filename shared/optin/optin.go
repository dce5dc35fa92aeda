// Package optin decides whether icekeeper may touch a table: the double key.
//
//   - The owner's key: the table property icekeeper.maintenance.enabled=true,
//     visible in the table's history like any property change.
//   - The operator's key: the table, or its namespace, is in the
//     deployment's grant list (ICEKEEPER_GRANTS), the same list the CDK
//     stack scopes the functions' IAM permissions to.
//
// Both keys: eligible. A grant without the property: never selected, quietly.
// The property without a grant: not eligible, and loud every time it is seen
// (Decision.Loud), because an owner who opted in expects maintenance that
// will not happen.
//
// Table properties under icekeeper. carry non-secret tuning only; a
// credential-shaped key (secret, password, token, key, credential) is
// rejected with ErrCredentialProperty.
package optin

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/sustain"
	"github.com/icekeeper/icekeeper/shared/workload"
)

// Table properties.
const (
	// PropertyEnabled is the owner's opt-in.
	PropertyEnabled = "icekeeper.maintenance.enabled"
	// PropertyMinInterval overrides the compaction cooldown (a Go duration
	// such as 30m or 6h).
	PropertyMinInterval = "icekeeper.compaction.min-interval"
	// PropertyOutputSpec chooses the partition spec a compaction writes
	// rows in (Spark's rewrite_data_files option output-spec-id):
	// "current" (the default: the table's default spec), "input" (each
	// group keeps its files' spec), or a spec id.
	PropertyOutputSpec = "icekeeper.compaction.output-spec-id"
	// PropertyExpireEnabled turns snapshot expiry off for an opted-in
	// table ("false"); it is on by default. The retention itself is the
	// table's history.expire.* (package expire).
	PropertyExpireEnabled = "icekeeper.expire.enabled"
	// PropertyCompactionEnabled and PropertyRewriteManifestsEnabled turn
	// compaction or manifest rewrites off for an opted-in table ("false");
	// both are on by default.
	PropertyCompactionEnabled       = "icekeeper.compaction.enabled"
	PropertyRewriteManifestsEnabled = "icekeeper.rewrite-manifests.enabled"
	// PropertyRewriteDeletesEnabled turns delete-file rewrites off for an
	// opted-in table ("false"); on by default.
	PropertyRewriteDeletesEnabled = "icekeeper.rewrite-deletes.enabled"
	// PropertyRewriteDeletesMinInputFiles is how many position delete
	// files a partition must have before they are rewritten into one
	// (a positive integer; default DefaultRewriteDeletesMinInputFiles, as
	// Spark's rewrite_position_delete_files min-input-files).
	PropertyRewriteDeletesMinInputFiles = "icekeeper.rewrite-deletes.min-input-files"
	// PropertyCompactionMinInputFiles is how many small files a group
	// must have to be compacted when together they do not fill a target
	// file (Spark's rewrite_data_files option min-input-files, under
	// icekeeper's prefix; default 5, Iceberg's). Lower it for a table
	// whose partitions should hold fewer small files, at the cost of
	// rewriting a partition's small files more often.
	PropertyCompactionMinInputFiles = "icekeeper.compaction.min-input-files"
	// Each later action's own cooldown (a Go duration; none by default:
	// the table's cooldown, PropertyMinInterval, spaces every job): the
	// action is not planned again within it.
	PropertyRewriteManifestsMinInterval = "icekeeper.rewrite-manifests.min-interval"
	PropertyRewriteDeletesMinInterval   = "icekeeper.rewrite-deletes.min-interval"
	PropertyExpireMinInterval           = "icekeeper.expire.min-interval"
	PropertyOrphansMinInterval          = "icekeeper.orphans.min-interval"
	// PropertyOrphansOlderThan is the safety age of orphan cleanup: only
	// files older than this may be removed (a Go duration; default
	// DefaultOrphanAge, never less than MinOrphanAge).
	PropertyOrphansOlderThan = "icekeeper.orphans.older-than"
	// PropertyOrphansEnabled asks for orphan cleanup on the orphan
	// schedule ("true"); it is off by default, as it lists the whole table
	// location and deletes files no metadata names.
	PropertyOrphansEnabled = "icekeeper.orphans.enabled"
	// PropertyHotPartitionIdleTime turns on active-write scoping: a
	// partition that a writer committed to within this time (a Go duration
	// such as 10m) is hot, and compaction leaves it alone unless it has
	// PropertyHotPartitionMinFiles candidate files. "0" or unset: off.
	PropertyHotPartitionIdleTime = "icekeeper.compaction.hot-partition.idle-time"
	// PropertyHotPartitionMinFiles is how many candidate files a hot
	// partition must have to be compacted anyway (default
	// DefaultHotPartitionMinFiles).
	PropertyHotPartitionMinFiles = "icekeeper.compaction.hot-partition.min-files"
	// PropertyHotPartitionMinFileAge narrows what compaction takes in a
	// hot partition to the old files: only data files whose adding
	// snapshot was committed longer ago than this (a Go duration such as
	// 2h) are candidates there; the younger ones, which a writer may still
	// be racing for, stay. "0" or unset: off. It applies to hot partitions
	// only, so it needs PropertyHotPartitionIdleTime.
	PropertyHotPartitionMinFileAge = "icekeeper.compaction.hot-partition.min-file-age"
	// PropertyPartialProgressEnabled ("true") lets a compaction commit its
	// file groups in batches, each its own atomic commit, so that a
	// failure loses only the batches not yet committed (Spark's
	// rewrite_data_files partial-progress.enabled, under icekeeper's
	// prefix). Off by default: a compaction is one atomic commit.
	PropertyPartialProgressEnabled = "icekeeper.compaction.partial-progress.enabled"
	// PropertyPartialProgressMaxCommits is the most commits such a
	// compaction makes (default DefaultPartialProgressMaxCommits, as
	// Spark's partial-progress.max-commits).
	PropertyPartialProgressMaxCommits = "icekeeper.compaction.partial-progress.max-commits"
	// PropertyCompactionStrategy chooses how compaction rewrites a
	// partition (Spark's rewrite_data_files strategy): "binpack" (the
	// default) packs small files and files with deletes into target-size
	// files; "sort" also sorts them by the table's sort order, rewriting
	// together the files whose ranges on the first sort column overlap,
	// so the new files do not overlap (binpack.PlanSorted).
	PropertyCompactionStrategy = "icekeeper.compaction.strategy"
	// PropertyZOrderColumns are the columns a "z-order" strategy
	// clusters on together (two to eight top-level column names,
	// comma-separated): rows are sorted by the z-value of those columns
	// (package zorder), so each file covers a small box of their space.
	PropertyZOrderColumns = "icekeeper.compaction.z-order-columns"
	// PropertyLayoutAuto ("true") lets icekeeper, in active mode, change
	// the table's layout to what its query signals recommend: its sort
	// order (and strategy sort), or strategy z-order on the recommended
	// columns, as one visible commit; compactions then rewrite the table
	// into it. Off by default: the recommendation is only reported.
	PropertyLayoutAuto = "icekeeper.layout.auto"
	// PropertyMaxBytesPerJob (bytes) bounds the input one sort or z-order
	// compaction rewrites: the partitions queried most lately first (the
	// query signals), the rest on later visits. Default: none, except
	// with PropertyLayoutAuto, where a new layout is rolled out
	// gradually, DefaultLayoutJobGroups groups' worth a job.
	PropertyMaxBytesPerJob = "icekeeper.compaction.max-bytes-per-job"
	// Prefix is the namespace of icekeeper's table properties.
	Prefix = "icekeeper."
)

// Sentinel errors; both are terminal for the table.
var (
	ErrCredentialProperty = errors.New("optin: credential-shaped icekeeper property")
	ErrBadProperty        = errors.New("optin: malformed icekeeper property")
	ErrBadGrant           = errors.New("optin: malformed grant")
)

// Grants is the operator's grant list.
type Grants struct {
	namespaces map[string]bool
	tables     map[string]bool
}

// ParseGrants parses a comma-separated grant list. "ns" or "ns.*" grants a
// namespace ("a.b.*" a nested one); "ns.table" grants one table.
func ParseGrants(s string) (Grants, error) {
	g := Grants{namespaces: map[string]bool{}, tables: map[string]bool{}}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		for _, part := range strings.Split(strings.TrimSuffix(e, ".*"), ".") {
			if part == "" || part == "*" {
				return Grants{}, fmt.Errorf("%w: %q (want ns, ns.* or ns.table)", ErrBadGrant, e)
			}
		}
		switch {
		case strings.HasSuffix(e, ".*"):
			g.namespaces[strings.TrimSuffix(e, ".*")] = true
		case !strings.Contains(e, "."):
			g.namespaces[e] = true
		default:
			g.tables[e] = true
		}
	}
	return g, nil
}

// Empty reports whether nothing is granted.
func (g Grants) Empty() bool { return len(g.namespaces) == 0 && len(g.tables) == 0 }

// Granted reports whether the dotted table name is granted, by itself or
// through its namespace.
func (g Grants) Granted(table string) bool {
	if g.tables[table] {
		return true
	}
	i := strings.LastIndex(table, ".")
	return i > 0 && g.namespaces[table[:i]]
}

// Namespaces lists the granted namespaces, sorted.
func (g Grants) Namespaces() []string { return sortedKeys(g.namespaces) }

// Tables lists the individually granted tables, sorted.
func (g Grants) Tables() []string { return sortedKeys(g.tables) }

// Databases lists every namespace that holds a granted table: the granted
// namespaces and the namespaces of granted tables, sorted (the Glue
// databases the functions may read).
func (g Grants) Databases() []string {
	set := map[string]bool{}
	for n := range g.namespaces {
		set[n] = true
	}
	for t := range g.tables {
		set[t[:strings.LastIndex(t, ".")]] = true
	}
	return sortedKeys(set)
}

// Entries lists the grant list in its normal form: "ns.*" for each
// namespace, then "ns.table" for each table.
func (g Grants) Entries() []string {
	var out []string
	for _, n := range g.Namespaces() {
		out = append(out, n+".*")
	}
	return append(out, g.Tables()...)
}

// HasEntry reports whether entry ("ns", "ns.*" or "ns.table") is one of
// the list's entries.
func (g Grants) HasEntry(entry string) bool {
	if g.namespaces[strings.TrimSuffix(entry, ".*")] && (strings.HasSuffix(entry, ".*") || !strings.Contains(entry, ".")) {
		return true
	}
	return g.tables[entry]
}

// String renders the list in ParseGrants' form.
func (g Grants) String() string { return strings.Join(g.Entries(), ",") }

// Decision is the double-key outcome for one table.
type Decision struct {
	Eligible bool
	// Loud: the owner opted in but the operator did not grant the table.
	Loud   bool
	Reason string
}

// Decide applies the double key. props are the table's properties.
func Decide(table string, props map[string]string, g Grants) Decision {
	enabled := Enabled(props)
	granted := g.Granted(table)
	switch {
	case enabled && granted:
		return Decision{Eligible: true, Reason: "owner opted in and operator granted"}
	case enabled:
		return Decision{Loud: true, Reason: "owner set " + PropertyEnabled + "=true but the operator has not granted " + table + " or its namespace (ICEKEEPER_GRANTS)"}
	case granted:
		return Decision{Reason: "granted, but the owner has not set " + PropertyEnabled + "=true"}
	default:
		return Decision{Reason: "neither opted in nor granted"}
	}
}

// Enabled reports whether the owner's property is true.
func Enabled(props map[string]string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(props[PropertyEnabled]))
	return err == nil && b
}

// ValidateProperties checks icekeeper's table properties: credential-shaped
// keys are rejected (ErrCredentialProperty), known keys must parse
// (ErrBadProperty).
func ValidateProperties(props map[string]string) error {
	var errs []error
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !strings.HasPrefix(strings.ToLower(k), Prefix) {
			continue
		}
		if credentialShaped(k) {
			errs = append(errs, fmt.Errorf("%w: %q: table properties are readable by anyone who can read the table; put credentials in IAM or Secrets Manager, never in icekeeper.* properties", ErrCredentialProperty, k))
			continue
		}
		v := props[k]
		switch k {
		case PropertyEnabled, PropertyExpireEnabled, PropertyOrphansEnabled, PropertyCompactionEnabled, PropertyRewriteManifestsEnabled, PropertyRewriteDeletesEnabled, PropertyPartialProgressEnabled, PropertyLayoutAuto:
			if _, err := strconv.ParseBool(strings.TrimSpace(v)); err != nil {
				errs = append(errs, fmt.Errorf("%w: %s=%q: want true or false", ErrBadProperty, k, v))
			}
		case PropertyOrphansOlderThan:
			if _, err := OrphanAge(props, 0); err != nil {
				errs = append(errs, err)
			}
		case PropertyRewriteDeletesMinInputFiles:
			if _, err := RewriteDeletesMinInputFiles(props); err != nil {
				errs = append(errs, err)
			}
		case PropertyCompactionMinInputFiles:
			if _, err := CompactionMinInputFiles(props, 1); err != nil {
				errs = append(errs, err)
			}
		case PropertyPartialProgressMaxCommits:
			if _, err := PartialProgress(map[string]string{PropertyPartialProgressEnabled: "true", k: v}); err != nil {
				errs = append(errs, err)
			}
		case PropertyHotPartitionIdleTime, PropertyHotPartitionMinFiles:
			if _, _, err := HotPartitions(map[string]string{k: v}); err != nil {
				errs = append(errs, err)
			}
		case PropertyHotPartitionMinFileAge:
			if _, err := HotPartitionMinFileAge(map[string]string{k: v}); err != nil {
				errs = append(errs, err)
			}
		case PropertyMinInterval, PropertyRewriteManifestsMinInterval, PropertyRewriteDeletesMinInterval, PropertyExpireMinInterval, PropertyOrphansMinInterval:
			if d, err := time.ParseDuration(strings.TrimSpace(v)); err != nil || d < 0 {
				errs = append(errs, fmt.Errorf("%w: %s=%q: want a duration such as 30m or 6h", ErrBadProperty, k, v))
			}
		case PropertyOutputSpec:
			if _, err := ParseOutputSpec(v); err != nil {
				errs = append(errs, err)
			}
		case PropertyMaxBytesPerJob:
			if _, err := MaxBytesPerJob(map[string]string{k: v}, 0); err != nil {
				errs = append(errs, err)
			}
		case workload.PropertyClass:
			if _, err := workload.Choose(v, nil); err != nil {
				errs = append(errs, fmt.Errorf("%w: %w", ErrBadProperty, err))
			}
		case sustain.PropertyWindows:
			if _, err := sustain.WindowsOf(map[string]string{k: v}); err != nil {
				errs = append(errs, fmt.Errorf("%w: %w", ErrBadProperty, err))
			}
		case PropertyCompactionStrategy, PropertyZOrderColumns:
			if _, err := CompactionStrategy(props); err != nil {
				errs = append(errs, err)
			} else if _, err := ZOrderColumns(props); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Strategy is a compaction strategy (PropertyCompactionStrategy).
type Strategy string

// Strategies.
const (
	StrategyBinpack Strategy = "binpack"
	StrategySort    Strategy = "sort"
	StrategyZOrder  Strategy = "z-order"
)

// CompactionStrategy reads PropertyCompactionStrategy (default binpack).
func CompactionStrategy(props map[string]string) (Strategy, error) {
	switch v := strings.ToLower(strings.TrimSpace(props[PropertyCompactionStrategy])); v {
	case "", string(StrategyBinpack):
		return StrategyBinpack, nil
	case string(StrategySort):
		return StrategySort, nil
	case string(StrategyZOrder):
		return StrategyZOrder, nil
	default:
		return "", fmt.Errorf("%w: %s=%q: want binpack, sort or z-order", ErrBadProperty, PropertyCompactionStrategy, props[PropertyCompactionStrategy])
	}
}

// LayoutAuto reports whether the owner let icekeeper change the table's
// layout (PropertyLayoutAuto).
func LayoutAuto(props map[string]string) bool {
	on, err := strconv.ParseBool(strings.TrimSpace(props[PropertyLayoutAuto]))
	return err == nil && on
}

// MaxZOrderColumns bounds a z-order: each column gets 64/n bits of the
// z-value's first 8 bytes, so more columns cluster each one less.
const MaxZOrderColumns = 8

// ZOrderColumns reads PropertyZOrderColumns: nil when unset; an error
// when the strategy is z-order without columns, or the list is not two to
// MaxZOrderColumns distinct names.
func ZOrderColumns(props map[string]string) ([]string, error) {
	v, set := props[PropertyZOrderColumns]
	if strategy, _ := CompactionStrategy(props); !set && strategy == StrategyZOrder {
		return nil, fmt.Errorf("%w: %s=%s needs %s (two or more columns, comma-separated)", ErrBadProperty, PropertyCompactionStrategy, StrategyZOrder, PropertyZOrderColumns)
	}
	if !set {
		return nil, nil
	}
	return ParseZOrderColumns(v)
}

// ParseZOrderColumns parses a comma-separated list of two to
// MaxZOrderColumns distinct column names (PropertyZOrderColumns, or the
// CLI's --z-order).
func ParseZOrderColumns(v string) ([]string, error) {
	var cols []string
	for _, c := range strings.Split(v, ",") {
		c = strings.TrimSpace(c)
		if c == "" || slices.Contains(cols, c) {
			return nil, fmt.Errorf("%w: %s=%q: want distinct column names, comma-separated", ErrBadProperty, PropertyZOrderColumns, v)
		}
		cols = append(cols, c)
	}
	if len(cols) < 2 || len(cols) > MaxZOrderColumns {
		return nil, fmt.Errorf("%w: %s=%q: want 2 to %d columns (one column is a sort: use strategy sort)", ErrBadProperty, PropertyZOrderColumns, v, MaxZOrderColumns)
	}
	return cols, nil
}

// DefaultRewriteDeletesMinInputFiles is PropertyRewriteDeletesMinInputFiles'
// default.
const DefaultRewriteDeletesMinInputFiles = 5

// RewriteDeletesMinInputFiles reads PropertyRewriteDeletesMinInputFiles.
func RewriteDeletesMinInputFiles(props map[string]string) (int, error) {
	return positiveCount(props, PropertyRewriteDeletesMinInputFiles, DefaultRewriteDeletesMinInputFiles)
}

// CompactionMinInputFiles reads PropertyCompactionMinInputFiles: def when
// the table does not set it. As in Iceberg Java
// (SizeBasedFileRewritePlanner.enoughInputFiles: more than one file, and
// at least min-input-files), a single file is never enough input files:
// 1 counts as 2, since rewriting one small file alone writes it again as
// it is.
func CompactionMinInputFiles(props map[string]string, def int) (int, error) {
	n, err := positiveCount(props, PropertyCompactionMinInputFiles, def)
	if err != nil {
		return 0, err
	}
	return max(n, 2), nil
}

// positiveCount reads the positive integer property key, def when unset.
func positiveCount(props map[string]string, key string, def int) (int, error) {
	v, ok := props[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %s=%q: want a positive integer", ErrBadProperty, key, v)
	}
	return n, nil
}

// DefaultPartialProgressMaxCommits is PropertyPartialProgressMaxCommits'
// default (Spark's).
const DefaultPartialProgressMaxCommits = 10

// MaxPartialProgressCommits caps PropertyPartialProgressMaxCommits: a
// larger value is taken as this many. Each batch leaves an entry in its
// job's record (jobs.EndBatch: its snapshot, or why it failed, at most
// jobs.MaxReasonBytes), and the record is one DynamoDB item of at most
// 400 KB ("Quotas in Amazon DynamoDB":
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).
const MaxPartialProgressCommits = 100

// PartialProgress reads the partial-progress properties: the most commits
// a compaction may make (at most MaxPartialProgressCommits), or 0 when
// partial progress is off.
func PartialProgress(props map[string]string) (int, error) {
	v := strings.TrimSpace(props[PropertyPartialProgressEnabled])
	if v == "" {
		return 0, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q: want true or false", ErrBadProperty, PropertyPartialProgressEnabled, v)
	}
	if !on {
		return 0, nil
	}
	maxCommits := DefaultPartialProgressMaxCommits
	if v, ok := props[PropertyPartialProgressMaxCommits]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return 0, fmt.Errorf("%w: %s=%q: want a positive integer", ErrBadProperty, PropertyPartialProgressMaxCommits, v)
		}
		maxCommits = min(n, MaxPartialProgressCommits)
	}
	return maxCommits, nil
}

// DefaultHotPartitionMinFiles is PropertyHotPartitionMinFiles' default.
const DefaultHotPartitionMinFiles = 100

// HotPartitions reads the active-write scoping properties: the idle time
// (0: off) and the candidate files at which a hot partition is compacted
// anyway.
func HotPartitions(props map[string]string) (time.Duration, int, error) {
	var idle time.Duration
	if v := strings.TrimSpace(props[PropertyHotPartitionIdleTime]); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, 0, fmt.Errorf("%w: %s=%q: want a duration such as 10m (0 turns it off)", ErrBadProperty, PropertyHotPartitionIdleTime, v)
		}
		idle = d
	}
	minFiles := DefaultHotPartitionMinFiles
	if v, ok := props[PropertyHotPartitionMinFiles]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return 0, 0, fmt.Errorf("%w: %s=%q: want a positive integer", ErrBadProperty, PropertyHotPartitionMinFiles, v)
		}
		minFiles = n
	}
	return idle, minFiles, nil
}

// HotPartitionMinFileAge reads PropertyHotPartitionMinFileAge: the age a
// data file of a hot partition must exceed to be a compaction candidate
// (0: off).
func HotPartitionMinFileAge(props map[string]string) (time.Duration, error) {
	v := strings.TrimSpace(props[PropertyHotPartitionMinFileAge])
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: %s=%q: want a duration such as 2h (0 turns it off)", ErrBadProperty, PropertyHotPartitionMinFileAge, v)
	}
	return d, nil
}

// Output specs (see PropertyOutputSpec).
const (
	OutputSpecCurrent = -1
	OutputSpecInput   = -2
)

// ParseOutputSpec parses PropertyOutputSpec: OutputSpecCurrent for "" or
// "current", OutputSpecInput for "input", else a spec id.
func ParseOutputSpec(v string) (int, error) {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case "", "current":
		return OutputSpecCurrent, nil
	case "input":
		return OutputSpecInput, nil
	}
	id, err := strconv.Atoi(v)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("%w: %s=%q: want current, input or a partition spec id", ErrBadProperty, PropertyOutputSpec, v)
	}
	return id, nil
}

// WrittenSpec is the partition spec a compaction writes for the parsed
// PropertyOutputSpec outSpec on a table whose default spec is
// defaultSpec: a spec id, or -1 (binpack.EachOwnSpec) when each group
// keeps its own spec.
func WrittenSpec(outSpec, defaultSpec int) int {
	switch outSpec {
	case OutputSpecCurrent:
		return defaultSpec
	case OutputSpecInput:
		return -1
	}
	return outSpec
}

// Orphan cleanup's safety ages: Iceberg's DeleteOrphanFiles default, and
// the least icekeeper accepts (a writer may take hours to commit what it
// wrote; S3 Tables' unreferenced file removal also waits at least a day).
const (
	DefaultOrphanAge = 72 * time.Hour
	MinOrphanAge     = 24 * time.Hour
)

// OrphanAge is the orphan safety age: override when positive, else the
// table's PropertyOrphansOlderThan, else DefaultOrphanAge. Less than
// MinOrphanAge is refused (ErrBadProperty).
func OrphanAge(props map[string]string, override time.Duration) (time.Duration, error) {
	age := DefaultOrphanAge
	if v := strings.TrimSpace(props[PropertyOrphansOlderThan]); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%w: %s=%q: want a duration such as 72h", ErrBadProperty, PropertyOrphansOlderThan, v)
		}
		age = d
	}
	if override > 0 {
		age = override
	}
	if age < MinOrphanAge {
		return 0, fmt.Errorf("%w: orphan safety age %s is below the minimum %s: a writer's uncommitted files could be removed", ErrBadProperty, age, MinOrphanAge)
	}
	return age, nil
}

// OrphansEnabled reports whether the owner asked for orphan cleanup.
func OrphansEnabled(props map[string]string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(props[PropertyOrphansEnabled]))
	return err == nil && b
}

// ExpireEnabled reports whether snapshot expiry is on for the table (it is
// unless PropertyExpireEnabled is false).
func ExpireEnabled(props map[string]string) bool { return OnUnlessFalse(props, PropertyExpireEnabled) }

// OnUnlessFalse reads an action's switch that is on by default: only
// "false" (any spelling strconv.ParseBool reads as false) turns it off.
func OnUnlessFalse(props map[string]string, key string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(props[key]))
	return err != nil || b
}

// MinInterval returns the table's compaction cooldown, or def.
func MinInterval(props map[string]string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(strings.TrimSpace(props[PropertyMinInterval])); err == nil && d >= 0 {
		return d
	}
	return def
}

func credentialShaped(key string) bool {
	words := strings.FieldsFunc(strings.ToLower(strings.TrimPrefix(strings.ToLower(key), Prefix)), func(r rune) bool {
		return r == '.' || r == '-' || r == '_'
	})
	for _, w := range words {
		switch {
		case w == "key" || w == "keys" || strings.HasSuffix(w, "key") && w != "monkey":
			return true
		case strings.Contains(w, "secret"), strings.Contains(w, "password"), strings.Contains(w, "passwd"),
			strings.Contains(w, "token"), strings.Contains(w, "credential"):
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DefaultLayoutJobGroups: with icekeeper.layout.auto, a sort or z-order
// compaction rewrites at most this many ICEKEEPER_MAX_GROUP_BYTES a job.
const DefaultLayoutJobGroups = 4

// MaxBytesPerJob reads PropertyMaxBytesPerJob: the most input bytes a sort
// or z-order compaction job takes (0: no bound), given the group size
// limit for the layout.auto default.
func MaxBytesPerJob(props map[string]string, maxGroupBytes int64) (int64, error) {
	v := strings.TrimSpace(props[PropertyMaxBytesPerJob])
	if v == "" {
		if LayoutAuto(props) {
			return DefaultLayoutJobGroups * maxGroupBytes, nil
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %s=%q: want a positive number of bytes", ErrBadProperty, PropertyMaxBytesPerJob, v)
	}
	return n, nil
}
