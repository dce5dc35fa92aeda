// Package config reads icekeeper's settings from environment variables.
//
// The Lambda functions, the operator CLI and the CDK stack use the same
// variable names (documented in README.md, "Configuration"), so a setting
// means the same thing everywhere. Validate fails fast with a message that
// names the variable.
package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/catalogs/catalogconfig"
	"github.com/icekeeper/icekeeper/shared/envvars"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/workload"
)

// ErrInvalid means a setting is missing or malformed; it is terminal.
var ErrInvalid = errors.New("config: invalid setting")

// Environment variable names (package envvars).
const (
	EnvCatalogType            = envvars.CatalogType
	EnvCatalogName            = envvars.CatalogName
	EnvCatalogURI             = envvars.CatalogURI
	EnvCatalogWarehouse       = envvars.CatalogWarehouse
	EnvCatalogConfig          = envvars.CatalogConfig
	EnvCatalogSigV4           = envvars.CatalogSigV4
	EnvCatalogSignName        = envvars.CatalogSignName
	EnvCatalogSignRegion      = envvars.CatalogSignRegion
	EnvCatalogProperties      = envvars.CatalogProperties
	EnvLeaseTable             = envvars.LeaseTable
	EnvJobsTable              = envvars.JobsTable
	EnvTaskQueueURL           = envvars.TaskQueueURL
	EnvCommitQueueURL         = envvars.CommitQueueURL
	EnvBucket                 = envvars.Bucket
	EnvPrefix                 = envvars.Prefix
	EnvMode                   = envvars.Mode
	EnvGrants                 = envvars.Grants
	EnvGrantsFile             = envvars.GrantsFile
	EnvEventBus               = envvars.EventBus
	EnvEventBusARN            = envvars.EventBusARN
	EnvWakeUpGroup            = envvars.WakeUpGroup
	EnvWakeUpRoleARN          = envvars.WakeUpRoleARN
	EnvMinInterval            = envvars.MinInterval
	EnvSweepMaxJobs           = envvars.SweepMaxJobs
	EnvSweepMaxBytes          = envvars.SweepMaxBytes
	EnvSweepMaxMetadataJobs   = envvars.SweepMaxMetadataJobs
	EnvSweepConcurrency       = envvars.SweepConcurrency
	EnvLeaseTTL               = envvars.LeaseTTL
	EnvMaxGroupBytes          = envvars.MaxGroupBytes
	EnvInlineTaskBytes        = envvars.InlineTaskBytes
	EnvInlineRowMapBytes      = envvars.InlineRowMapBytes
	EnvMaxTaskAttempts        = envvars.MaxTaskAttempts
	EnvCommitRetries          = envvars.CommitRetries
	EnvScanConcurrency        = envvars.ScanConcurrency
	EnvReadAheadFiles         = envvars.ReadAheadFiles
	EnvUploadPartBytes        = envvars.UploadPartBytes
	EnvSortWindowBytes        = envvars.SortWindowBytes
	EnvScanPricePerTB         = envvars.ScanPricePerTB
	EnvLedgerBackOff          = envvars.LedgerBackOff
	EnvExchangePageBytes      = envvars.ExchangePageBytes
	EnvTargetFileSize         = envvars.TargetFileSize
	EnvS3PathStyle            = envvars.S3PathStyle
	EnvCommitTakeover         = envvars.CommitTakeover
	EnvRewriterMemoryMB       = envvars.RewriterMemoryMB
	EnvCoordinatorMemMB       = envvars.CoordinatorMemMB
	EnvOrphanListFanOut       = envvars.OrphanListFanOut
	EnvMaxJobFiles            = envvars.MaxJobFiles
	EnvAthenaWorkGroupClasses = envvars.AthenaWorkGroupClasses
	EnvRewriterConcurrency    = envvars.RewriterConcurrency
	EnvRebaseDeletes          = envvars.RebaseDeletes
)

// Mode is what the functions may do.
type Mode string

// Modes.
const (
	// ModeOff: the functions do nothing and need no table permissions.
	ModeOff Mode = "off"
	// ModeAdvisory: read metadata and publish health; never write to a
	// table or its location.
	ModeAdvisory Mode = "advisory"
	// ModeActive: advisory plus the compaction pipeline.
	ModeActive Mode = "active"
)

// Defaults.
const (
	DefaultMinInterval   = time.Hour
	DefaultSweepMaxJobs  = 10
	DefaultSweepMaxBytes = int64(1) << 40
	// DefaultSweepMaxMetadataJobs bounds a sweep's manifest rewrites and
	// snapshot expiries of tables with nothing to compact: one planning
	// and one commit each, no rewriters.
	DefaultSweepMaxMetadataJobs = 100
	// DefaultSweepConcurrency: a sweep loads and assesses this many
	// tables at once. Each table is a chain of requests that mostly wait
	// (the catalog's GetTable, then the metadata file, the manifest list
	// and the manifests, its published health report): one after another
	// at S3's tens of milliseconds a request, 10,000 tables took longer
	// than Lambda's 15 minutes (docs/PERFORMANCE.md, "A sweep at S3's and
	// Glue's latency").
	DefaultSweepConcurrency = 16
	DefaultLeaseTTL         = 30 * time.Minute
	DefaultMaxGroupBytes    = int64(2) << 30
	DefaultInlineTaskBytes  = 192 << 10
	DefaultMaxTaskAttempts  = envvars.DefaultMaxTaskAttempts
	DefaultCommitRetries    = 5
	DefaultCommitTakeover   = 16 * time.Minute
	// DefaultOrphanListFanOut: tables whose current snapshot has this many
	// data and delete files have their orphan listing fanned out.
	DefaultOrphanListFanOut = int64(100_000)
	// DefaultMaxJobFiles: see envvars.DefaultMaxJobFiles.
	DefaultMaxJobFiles = envvars.DefaultMaxJobFiles
	// DefaultRewriterConcurrency: see envvars.DefaultRewriterConcurrency.
	DefaultRewriterConcurrency = envvars.DefaultRewriterConcurrency
)

// Config is every setting of the pipeline.
type Config struct {
	Catalog catalogconfig.Config

	LeaseTable     string
	JobsTable      string
	TaskQueueURL   string
	CommitQueueURL string
	Bucket         string
	Prefix         string

	// Mode is off (default), advisory or active.
	Mode Mode
	// Grants is the operator's grant list (ICEKEEPER_GRANTS, optin.ParseGrants
	// form): namespaces ("ns" or "ns.*") and tables ("ns.table").
	Grants string
	// EventBus receives audit events (opt-in without grant).
	EventBus string
	// WakeUpGroup, WakeUpRoleARN and EventBusARN turn on the planner's
	// expiry wake-ups (package wakeup): EventBridge Scheduler's schedule
	// group, the role it assumes, and the ARN of EventBus, its target. All
	// three or none (off).
	WakeUpGroup, WakeUpRoleARN, EventBusARN string
	// MinInterval is the default per-table compaction cooldown; the table
	// property icekeeper.compaction.min-interval overrides it.
	MinInterval time.Duration
	// SweepMaxJobs and SweepMaxBytes bound what one scheduled sweep starts.
	SweepMaxJobs  int
	SweepMaxBytes int64
	// SweepMaxMetadataJobs bounds the metadata-only jobs (manifest
	// rewrites, snapshot expiries) one sweep starts, apart from the data
	// jobs SweepMaxJobs counts.
	SweepMaxMetadataJobs int
	// SweepConcurrency is how many tables a sweep loads and assesses at
	// once (1: one after another).
	SweepConcurrency int

	// LeaseTTL is how long a job's lease lasts; it must cover planning,
	// rewriting and committing (Lambda's 15-minute limit per stage).
	LeaseTTL time.Duration
	// MaxGroupBytes caps one file group's input bytes, so one rewriter can
	// finish within Lambda's memory and 15 minutes.
	MaxGroupBytes int64
	// InlineTaskBytes is the largest task message sent inline; larger ones
	// travel through S3 with a pointer in the message.
	InlineTaskBytes int
	// InlineRowMapBytes is the largest row map a rewriter writes into its
	// descriptor; larger ones are an S3 object of their own (0: the
	// default, messages.DefaultInlineRowMapBytes).
	InlineRowMapBytes int
	// OrphanListFanOutFiles: an orphan cleanup of a table whose current
	// snapshot has at least this many data and delete files lists its
	// location with one rewriter task per prefix; 0 never fans out.
	OrphanListFanOutFiles int64
	// MaxJobFiles caps a compaction job's input files, so that its
	// committer can hold them (the committer reads every input file's
	// metadata, with statistics): the groups beyond are left for the next
	// jobs. 0: no cap.
	MaxJobFiles int64
	// RewriterConcurrency is how many groups the stack rewrites at once
	// (the task queue's event source's maximum concurrency): a busy
	// table's compaction takes at most that many groups (package
	// throttle).
	RewriterConcurrency int
	// MaxTaskAttempts is how many deliveries a rewriter task gets before its
	// group fails the job; it must equal the task queue's maxReceiveCount.
	MaxTaskAttempts int
	// CommitRetries bounds the committer's reload-revalidate-rebuild loop on
	// catalog commit conflicts.
	CommitRetries int
	// RebaseDeletes: the committer rebases position deletes and deletion
	// vectors committed during a compaction onto its new files (true, the
	// default); false aborts such jobs, as Iceberg's Java actions do.
	RebaseDeletes bool
	// CommitTakeover is how long a job may stay committing before another
	// committer may take it over; it must exceed the committer's timeout.
	CommitTakeover time.Duration
	// RewriterMemoryMB and CoordinatorMemoryMB are the functions' memory
	// sizes, for the maintenance log's cost estimate.
	RewriterMemoryMB    int
	CoordinatorMemoryMB int
	// ScanConcurrency is the rewriter's read concurrency (0: GOMAXPROCS).
	ScanConcurrency int
	// ReadAheadFiles is how many of a group's files the rewriter reads at
	// once ahead of its scan, so that S3's latency is not paid file by
	// file (0: fileio.DefaultReadAheadFiles; -1: none).
	ReadAheadFiles int
	// UploadPartBytes is the size of the parts new files are uploaded in
	// (0: fileio.DefaultPartBytes): a part is a PUT request, and a file
	// smaller than one part is one PutObject.
	UploadPartBytes int
	// SortWindowBytes bounds the rows a rewriter sorts in memory at once
	// (sort compaction); a larger group is sorted in runs spilled to /tmp
	// and merged. 0: a quarter of the function's memory limit.
	SortWindowBytes int64
	// ScanPricePerTB is the query engine's price per TB scanned, for the
	// ledger's savings; LedgerBackOff how long a table whose maintenance
	// costs more than it saves waits between compactions. 0: the ledger's
	// defaults (Athena's $5, a week).
	ScanPricePerTB float64
	LedgerBackOff  time.Duration
	// AthenaWorkGroupClasses maps Athena workgroups to the workload class
	// of their queries (package workload); nil: by the workgroup's name.
	AthenaWorkGroupClasses map[string]string
	// ExchangePageBytes is the Arrow size of a two-stage sort's scratch
	// pages (0: exchange.DefaultPageBytes, 4 MiB).
	ExchangePageBytes int64
	// TargetFileSize overrides write.target-file-size-bytes (0: the table's).
	TargetFileSize int64
}

// Defaults returns a Config with every default set and no names.
func Defaults() Config {
	return Config{
		Catalog:               catalogconfig.Config{Name: "default"},
		Mode:                  ModeOff,
		EventBus:              "default",
		MinInterval:           DefaultMinInterval,
		SweepMaxJobs:          DefaultSweepMaxJobs,
		SweepMaxBytes:         DefaultSweepMaxBytes,
		SweepMaxMetadataJobs:  DefaultSweepMaxMetadataJobs,
		SweepConcurrency:      DefaultSweepConcurrency,
		LeaseTTL:              DefaultLeaseTTL,
		MaxGroupBytes:         DefaultMaxGroupBytes,
		InlineTaskBytes:       DefaultInlineTaskBytes,
		OrphanListFanOutFiles: DefaultOrphanListFanOut,
		MaxJobFiles:           DefaultMaxJobFiles,
		RewriterConcurrency:   DefaultRewriterConcurrency,
		MaxTaskAttempts:       DefaultMaxTaskAttempts,
		CommitRetries:         DefaultCommitRetries,
		RebaseDeletes:         true,
		CommitTakeover:        DefaultCommitTakeover,
		RewriterMemoryMB:      1769,
		CoordinatorMemoryMB:   1024,
	}
}

// FromEnv reads the settings from the process environment.
func FromEnv() (Config, error) { return FromLookup(os.Getenv) }

// FromLookup reads the settings through getenv (for tests).
func FromLookup(getenv func(string) string) (Config, error) {
	c := Defaults()
	var errs []error
	setS := func(dst *string, k string) {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			*dst = v
		}
	}
	setI := func(dst *int, k string) {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				errs = append(errs, fmt.Errorf("%w: %s=%q: want a non-negative integer", ErrInvalid, k, v))
				return
			}
			*dst = n
		}
	}
	setI64 := func(dst *int64, k string) {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				errs = append(errs, fmt.Errorf("%w: %s=%q: want a non-negative integer", ErrInvalid, k, v))
				return
			}
			*dst = n
		}
	}
	setS(&c.Catalog.Type, EnvCatalogType)
	setS(&c.Catalog.Name, EnvCatalogName)
	setS(&c.Catalog.URI, EnvCatalogURI)
	setS(&c.Catalog.Warehouse, EnvCatalogWarehouse)
	setS(&c.Catalog.ConfigFile, EnvCatalogConfig)
	setS(&c.Catalog.SigningName, EnvCatalogSignName)
	setS(&c.Catalog.SigningRegion, EnvCatalogSignRegion)
	if v := strings.TrimSpace(getenv(EnvCatalogSigV4)); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s=%q: want true or false", ErrInvalid, EnvCatalogSigV4, v))
		}
		c.Catalog.SigV4 = b
	}
	if v := strings.TrimSpace(getenv(EnvRebaseDeletes)); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s=%q: want true or false", ErrInvalid, EnvRebaseDeletes, v))
		}
		c.RebaseDeletes = b
	}
	if v := getenv(EnvCatalogProperties); v != "" {
		p, err := catalogconfig.ParseProperties(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %v", ErrInvalid, EnvCatalogProperties, err))
		}
		c.Catalog.Properties = p
	}
	setS(&c.LeaseTable, EnvLeaseTable)
	setS(&c.JobsTable, EnvJobsTable)
	setS(&c.TaskQueueURL, EnvTaskQueueURL)
	setS(&c.CommitQueueURL, EnvCommitQueueURL)
	setS(&c.Bucket, EnvBucket)
	setS(&c.Prefix, EnvPrefix)
	if v := getenv(EnvMode); strings.TrimSpace(v) != "" {
		if m, err := ParseMode(v); err != nil {
			errs = append(errs, err)
		} else {
			c.Mode = m
		}
	}
	setS(&c.Grants, EnvGrants)
	if p := strings.TrimSpace(getenv(EnvGrantsFile)); p != "" {
		if strings.TrimSpace(c.Grants) != "" {
			errs = append(errs, fmt.Errorf("%w: set %s or %s, not both", ErrInvalid, EnvGrants, EnvGrantsFile))
		} else if g, err := readGrantsFile(p, getenv("LAMBDA_TASK_ROOT")); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrInvalid, EnvGrantsFile, err))
		} else {
			c.Grants = g
		}
	}
	setS(&c.EventBus, EnvEventBus)
	setS(&c.WakeUpGroup, EnvWakeUpGroup)
	setS(&c.WakeUpRoleARN, EnvWakeUpRoleARN)
	setS(&c.EventBusARN, EnvEventBusARN)
	if n := countSet(c.WakeUpGroup, c.WakeUpRoleARN, c.EventBusARN); n != 0 && n != 3 {
		errs = append(errs, fmt.Errorf("%w: the expiry wake-ups need %s, %s and %s, or none of them", ErrInvalid, EnvWakeUpGroup, EnvWakeUpRoleARN, EnvEventBusARN))
	}
	setI(&c.SweepMaxJobs, EnvSweepMaxJobs)
	setI64(&c.SweepMaxBytes, EnvSweepMaxBytes)
	setI(&c.SweepMaxMetadataJobs, EnvSweepMaxMetadataJobs)
	setI(&c.SweepConcurrency, EnvSweepConcurrency)
	if c.SweepConcurrency == 0 {
		errs = append(errs, fmt.Errorf("%w: %s=0: want at least 1 (1: one table after another)", ErrInvalid, EnvSweepConcurrency))
	}
	if v := strings.TrimSpace(getenv(EnvMinInterval)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%w: %s=%q: want a duration such as 1h", ErrInvalid, EnvMinInterval, v))
		} else {
			c.MinInterval = d
		}
	}
	if v := strings.TrimSpace(getenv(EnvLeaseTTL)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%w: %s=%q: want a positive duration such as 30m", ErrInvalid, EnvLeaseTTL, v))
		} else {
			c.LeaseTTL = d
		}
	}
	if v := strings.TrimSpace(getenv(EnvCommitTakeover)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			errs = append(errs, fmt.Errorf("%w: %s=%q: want a duration of at least 1m, longer than the committer's timeout, such as 16m", ErrInvalid, EnvCommitTakeover, v))
		} else {
			c.CommitTakeover = d
		}
	}
	if v := strings.TrimSpace(getenv(EnvScanPricePerTB)); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			errs = append(errs, fmt.Errorf("%w: %s=%q: want a price in dollars per TB scanned, such as 5", ErrInvalid, EnvScanPricePerTB, v))
		} else {
			c.ScanPricePerTB = f
		}
	}
	if v := strings.TrimSpace(getenv(EnvAthenaWorkGroupClasses)); v != "" {
		m, err := workload.ParseWorkGroupClasses(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrInvalid, EnvAthenaWorkGroupClasses, err))
		} else {
			c.AthenaWorkGroupClasses = m
		}
	}
	if v := strings.TrimSpace(getenv(EnvLedgerBackOff)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%w: %s=%q: want a positive duration, such as 168h", ErrInvalid, EnvLedgerBackOff, v))
		} else {
			c.LedgerBackOff = d
		}
	}
	setI64(&c.MaxGroupBytes, EnvMaxGroupBytes)
	setI(&c.InlineTaskBytes, EnvInlineTaskBytes)
	setI(&c.InlineRowMapBytes, EnvInlineRowMapBytes)
	setI(&c.MaxTaskAttempts, EnvMaxTaskAttempts)
	setI(&c.CommitRetries, EnvCommitRetries)
	setI(&c.ScanConcurrency, EnvScanConcurrency)
	if v := strings.TrimSpace(getenv(EnvUploadPartBytes)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n != 0 && (n < 5<<20 || int64(n) > 5<<30) {
			errs = append(errs, fmt.Errorf("%w: %s=%q: want a part size between 5 MiB and 5 GiB (S3's limits), or 0 for the default", ErrInvalid, EnvUploadPartBytes, v))
		} else {
			c.UploadPartBytes = n
		}
	}
	if v := strings.TrimSpace(getenv(EnvReadAheadFiles)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 {
			errs = append(errs, fmt.Errorf("%w: %s=%q: want a number of files, 0 for the default or -1 for none", ErrInvalid, EnvReadAheadFiles, v))
		} else {
			c.ReadAheadFiles = n
		}
	}
	setI64(&c.SortWindowBytes, EnvSortWindowBytes)
	setI64(&c.ExchangePageBytes, EnvExchangePageBytes)
	setI(&c.RewriterMemoryMB, EnvRewriterMemoryMB)
	setI(&c.CoordinatorMemoryMB, EnvCoordinatorMemMB)
	setI64(&c.TargetFileSize, EnvTargetFileSize)
	setI64(&c.OrphanListFanOutFiles, EnvOrphanListFanOut)
	setI64(&c.MaxJobFiles, EnvMaxJobFiles)
	if v := strings.TrimSpace(getenv(EnvRewriterConcurrency)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%w: %s=%q: want a positive integer, the task queue's maximum concurrency", ErrInvalid, EnvRewriterConcurrency, v))
		} else {
			c.RewriterConcurrency = n
		}
	}
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	return c, nil
}

// countSet counts the values that are not empty.
func countSet(values ...string) int {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	return n
}

// WakeUps reports whether the planner's expiry wake-ups are configured.
func (c Config) WakeUps() bool { return c.WakeUpGroup != "" }

// Env returns the settings as environment variables (the inverse of
// FromLookup), for handing to a child process or printing.
func (c Config) Env() map[string]string {
	m := map[string]string{
		EnvCatalogType: c.Catalog.Type, EnvCatalogName: c.Catalog.Name, EnvCatalogURI: c.Catalog.URI,
		EnvCatalogWarehouse: c.Catalog.Warehouse, EnvCatalogConfig: c.Catalog.ConfigFile,
		EnvLeaseTable: c.LeaseTable, EnvJobsTable: c.JobsTable, EnvTaskQueueURL: c.TaskQueueURL,
		EnvCommitQueueURL: c.CommitQueueURL, EnvBucket: c.Bucket, EnvPrefix: c.Prefix,
		EnvMode: string(c.Mode), EnvGrants: c.Grants, EnvEventBus: c.EventBus, EnvMinInterval: c.MinInterval.String(),
		EnvWakeUpGroup: c.WakeUpGroup, EnvWakeUpRoleARN: c.WakeUpRoleARN, EnvEventBusARN: c.EventBusARN,
		EnvSweepMaxJobs: strconv.Itoa(c.SweepMaxJobs), EnvSweepMaxBytes: strconv.FormatInt(c.SweepMaxBytes, 10),
		EnvSweepMaxMetadataJobs: strconv.Itoa(c.SweepMaxMetadataJobs),
		EnvSweepConcurrency:     strconv.Itoa(c.SweepConcurrency),
		EnvLeaseTTL:             c.LeaseTTL.String(),
		EnvMaxGroupBytes:        strconv.FormatInt(c.MaxGroupBytes, 10), EnvInlineTaskBytes: strconv.Itoa(c.InlineTaskBytes),
		EnvMaxTaskAttempts: strconv.Itoa(c.MaxTaskAttempts), EnvCommitRetries: strconv.Itoa(c.CommitRetries),
		EnvCommitTakeover:   c.CommitTakeover.String(),
		EnvRewriterMemoryMB: strconv.Itoa(c.RewriterMemoryMB), EnvCoordinatorMemMB: strconv.Itoa(c.CoordinatorMemoryMB),
		EnvOrphanListFanOut: strconv.FormatInt(c.OrphanListFanOutFiles, 10), EnvMaxJobFiles: strconv.FormatInt(c.MaxJobFiles, 10),
		EnvRebaseDeletes: strconv.FormatBool(c.RebaseDeletes), EnvRewriterConcurrency: strconv.Itoa(c.RewriterConcurrency),
	}
	if len(c.Catalog.Properties) > 0 {
		m[EnvCatalogProperties] = catalogconfig.FormatProperties(c.Catalog.Properties)
	}
	if c.Catalog.SigV4 {
		m[EnvCatalogSigV4] = "true"
	}
	if c.TargetFileSize > 0 {
		m[EnvTargetFileSize] = strconv.FormatInt(c.TargetFileSize, 10)
	}
	if c.InlineRowMapBytes > 0 {
		m[EnvInlineRowMapBytes] = strconv.Itoa(c.InlineRowMapBytes)
	}
	if c.ExchangePageBytes > 0 {
		m[EnvExchangePageBytes] = strconv.FormatInt(c.ExchangePageBytes, 10)
	}
	if c.ReadAheadFiles != 0 {
		m[EnvReadAheadFiles] = strconv.Itoa(c.ReadAheadFiles)
	}
	if c.UploadPartBytes > 0 {
		m[EnvUploadPartBytes] = strconv.Itoa(c.UploadPartBytes)
	}
	if c.ScanPricePerTB > 0 {
		m[EnvScanPricePerTB] = strconv.FormatFloat(c.ScanPricePerTB, 'g', -1, 64)
	}
	if c.LedgerBackOff > 0 {
		m[EnvLedgerBackOff] = c.LedgerBackOff.String()
	}
	for k, v := range m {
		if v == "" {
			delete(m, k)
		}
	}
	return m
}

// Validate checks the settings one stage needs. need lists which of the
// pipeline's resources that stage uses.
func (c Config) Validate(need ...Need) error {
	var errs []error
	for _, n := range need {
		switch n {
		case NeedCatalog:
			if err := c.Catalog.Validate(); err != nil {
				errs = append(errs, err)
			}
		case NeedLeases:
			if c.LeaseTable == "" {
				errs = append(errs, fmt.Errorf("%w: %s is not set", ErrInvalid, EnvLeaseTable))
			}
		case NeedJobs:
			if c.JobsTable == "" {
				errs = append(errs, fmt.Errorf("%w: %s is not set", ErrInvalid, EnvJobsTable))
			}
		case NeedTaskQueue:
			if c.TaskQueueURL == "" {
				errs = append(errs, fmt.Errorf("%w: %s is not set", ErrInvalid, EnvTaskQueueURL))
			}
		case NeedCommitQueue:
			if c.CommitQueueURL == "" {
				errs = append(errs, fmt.Errorf("%w: %s is not set", ErrInvalid, EnvCommitQueueURL))
			}
		case NeedBucket:
			if c.Bucket == "" {
				errs = append(errs, fmt.Errorf("%w: %s is not set", ErrInvalid, EnvBucket))
			}
		}
	}
	if c.LeaseTTL <= 0 {
		errs = append(errs, fmt.Errorf("%w: %s must be positive", ErrInvalid, EnvLeaseTTL))
	}
	if c.MaxGroupBytes <= 0 {
		errs = append(errs, fmt.Errorf("%w: %s must be positive", ErrInvalid, EnvMaxGroupBytes))
	}
	if c.MaxJobFiles < 0 {
		errs = append(errs, fmt.Errorf("%w: %s must not be negative", ErrInvalid, EnvMaxJobFiles))
	}
	if c.RewriterConcurrency < 1 {
		errs = append(errs, fmt.Errorf("%w: %s must be at least 1", ErrInvalid, EnvRewriterConcurrency))
	}
	if c.SortWindowBytes < 0 {
		errs = append(errs, fmt.Errorf("%w: %s must not be negative", ErrInvalid, EnvSortWindowBytes))
	}
	if c.UploadPartBytes != 0 && (c.UploadPartBytes < 5<<20 || int64(c.UploadPartBytes) > 5<<30) {
		errs = append(errs, fmt.Errorf("%w: %s must be between 5 MiB and 5 GiB (S3's part sizes), or 0 for the default", ErrInvalid, EnvUploadPartBytes))
	}
	if c.ReadAheadFiles < -1 {
		errs = append(errs, fmt.Errorf("%w: %s must be a number of files, 0 for the default or -1 for none", ErrInvalid, EnvReadAheadFiles))
	}
	if c.Mode == ModeActive {
		g, err := optin.ParseGrants(c.Grants)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %v", ErrInvalid, EnvGrants, err))
		} else if g.Empty() {
			errs = append(errs, fmt.Errorf("%w: %s=active refuses to start without a grant list (%s)", ErrInvalid, EnvMode, EnvGrants))
		}
	}
	if c.MaxTaskAttempts < 1 {
		errs = append(errs, fmt.Errorf("%w: %s must be at least 1", ErrInvalid, EnvMaxTaskAttempts))
	}
	return errors.Join(errs...)
}

// Need names a resource a stage uses.
type Need int

// Resources.
const (
	NeedCatalog Need = iota
	NeedLeases
	NeedJobs
	NeedTaskQueue
	NeedCommitQueue
	NeedBucket
)

// ParseMode parses an ICEKEEPER_MODE value: off, advisory or active.
func ParseMode(v string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(v))); m {
	case ModeOff, ModeAdvisory, ModeActive:
		return m, nil
	}
	return "", fmt.Errorf("%w: %s=%q: want off, advisory or active", ErrInvalid, EnvMode, v)
}

// readGrantsFile reads the grant list of ICEKEEPER_GRANTS_FILE: entries
// separated by commas or newlines. A relative path is relative to taskRoot
// when set (LAMBDA_TASK_ROOT, "the path to your Lambda function code":
// https://docs.aws.amazon.com/lambda/latest/dg/current-supported-versions.html),
// where the CDK stack puts the file.
func readGrantsFile(path, taskRoot string) (string, error) {
	if !filepath.IsAbs(path) && taskRoot != "" {
		path = filepath.Join(taskRoot, path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the grant list: %w", err)
	}
	return envvars.GrantsFromFile(string(raw)), nil
}
