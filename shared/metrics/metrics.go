// Package metrics writes CloudWatch metrics as Embedded Metric Format (EMF)
// log lines.
//
// EMF is a JSON log event that CloudWatch Logs turns into metrics on
// ingestion: an "_aws" member carries the timestamp and, for each namespace,
// the dimension sets and the names and units of the metrics; the dimension
// values and the metric values are top-level members of the same object:
//
//	{"_aws":{"Timestamp":1767225600000,"CloudWatchMetrics":[{"Namespace":"Icekeeper",
//	  "Dimensions":[["Function"]],"Metrics":[{"Name":"SmallFiles","Unit":"Count"}]}]},
//	 "Function":"planner","Table":"demo.orders","SmallFiles":48}
//
// A Lambda function's stdout already goes to CloudWatch Logs, so printing one
// such line per table is all it takes to publish metrics.
//
// What a metric costs. CloudWatch bills every distinct combination of
// metric name and dimension values as one custom metric, and EMF lines also
// as log ingestion ("Charges are incurred for logs ingestion and archival,
// and custom metrics that are generated"; a high-cardinality dimension
// creates "a custom metric corresponding to each unique dimension
// combination":
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format.html).
// A table name has as many values as the deployment has tables, so the
// dimension Table (TableDimension) is special: every line carries the
// table as a member of the log record (CloudWatch Logs Insights reads it
// there), but it is a dimension only of the metrics marked PerTable, the
// few an alarm or the dashboard reads per table. The others are published
// with the line's other dimensions (Function, Reason), one metric for the
// whole deployment; a metric marked LogOnly is not published at all, its
// value stays in the log record (and in the health report or the
// maintenance log). The EMF specification lets the root node carry
// members no directive references
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html),
// and a line with no published metric carries no "_aws" member: it is a
// plain JSON log event, which costs its ingestion only. icekeeper uses EMF
// rather than the PutMetricData API because it is cheaper (no API call per
// metric, no extra IAM permission, nothing to retry or batch in the function,
// and the values stay searchable in the logs) and because the AWS emulator the
// tests run against rejects PutMetricData calls that carry a Timestamp.
//
// Invariants: every Emit call writes exactly one whole line (one Write of the
// encoded object plus its newline, under a mutex, so concurrent calls never
// interleave); dimension names are listed sorted; Table is a dimension of
// PerTable metrics only; a call that cannot produce a
// valid EMF object (no metrics, a name used twice, a value JSON cannot carry,
// an unknown unit) writes nothing and returns an error.
package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"time"
)

// DefaultNamespace is the CloudWatch namespace of icekeeper's metrics.
const DefaultNamespace = "Icekeeper"

// CloudWatch units used by icekeeper (a subset of CloudWatch's StandardUnit).
const (
	Count        = "Count"
	Bytes        = "Bytes"
	Seconds      = "Seconds"
	Milliseconds = "Milliseconds"
	None         = "None"
	Percent      = "Percent"
)

// Units lists the units Emit accepts.
func Units() []string { return []string{Count, Bytes, Seconds, Milliseconds, None, Percent} }

// Limits of one EMF directive (CloudWatch rejects larger ones).
const (
	// MaxMetrics is the most metrics one Emit call may carry.
	MaxMetrics = 100
	// MaxDimensions is the most dimensions one Emit call may carry.
	MaxDimensions = 30
)

// Errors.
var (
	// ErrInvalid reports a call that cannot be encoded as valid EMF; it is
	// not retryable (the same call fails again).
	ErrInvalid = errors.New("metrics: invalid EMF event")
)

// TableDimension is the dimension naming the table a line is about: always
// in the log record, a CloudWatch dimension only of PerTable metrics.
const TableDimension = "Table"

// Publication is how a metric reaches CloudWatch.
type Publication int

const (
	// Aggregated (the zero value): published with the line's dimensions
	// except Table, one metric per function (and reason) for the whole
	// deployment; the table stays in the log record.
	Aggregated Publication = iota
	// PerTable: published with all of the line's dimensions, Table
	// included: one custom metric per table, so only for what an alarm or
	// the dashboard reads per table (infra/alarms.go, infra/dashboard.go;
	// infra/stack_test.go holds that every per-table metric is read).
	PerTable
	// LogOnly: not published; the value is in the log record only.
	LogOnly
)

// Metric is one value of one metric. Unit is one of the unit constants
// (empty means None); Publish says how it reaches CloudWatch.
type Metric struct {
	Name    string
	Value   float64
	Unit    string
	Publish Publication
}

// Emitter writes EMF lines to a writer. It is safe for concurrent use.
//
//	em := metrics.NewEmitter(os.Stdout, metrics.DefaultNamespace, time.Now)
//	err := em.Emit(map[string]string{metrics.TableDimension: "demo.orders", "Function": "planner"},
//		metrics.Metric{Name: "SmallFiles", Value: 48, Unit: metrics.Count},
//		metrics.Metric{Name: "DataFiles", Value: 60, Unit: metrics.Count, Publish: metrics.LogOnly})
type Emitter struct {
	w         io.Writer
	namespace string
	now       func() time.Time
	mu        sync.Mutex
}

// NewEmitter returns an emitter writing to w under namespace (empty:
// DefaultNamespace), stamping each line with now() (nil: time.Now).
func NewEmitter(w io.Writer, namespace string, now func() time.Time) *Emitter {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if now == nil {
		now = time.Now
	}
	return &Emitter{w: w, namespace: namespace, now: now}
}

// Namespace is the emitter's CloudWatch namespace.
func (e *Emitter) Namespace() string { return e.namespace }

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type awsMeta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Emit writes one EMF line carrying dimensions and ms as members of the
// record. The PerTable metrics are published under one dimension set made
// of all of dimensions' names; the Aggregated ones under the same set less
// Table (one directive each, when both are present); the LogOnly ones are
// not published. It writes nothing and returns an error wrapping
// ErrInvalid when the event would not be valid EMF, or the writer's error.
func (e *Emitter) Emit(dimensions map[string]string, ms ...Metric) error {
	line, err := e.encode(dimensions, ms)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.w.Write(line); err != nil {
		return fmt.Errorf("metrics: write EMF line: %w", err)
	}
	return nil
}

func (e *Emitter) encode(dimensions map[string]string, ms []Metric) ([]byte, error) {
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: no metrics", ErrInvalid)
	}
	if len(ms) > MaxMetrics {
		return nil, fmt.Errorf("%w: %d metrics, at most %d per event", ErrInvalid, len(ms), MaxMetrics)
	}
	if len(dimensions) > MaxDimensions {
		return nil, fmt.Errorf("%w: %d dimensions, at most %d", ErrInvalid, len(dimensions), MaxDimensions)
	}
	obj := make(map[string]any, len(dimensions)+len(ms)+1)
	names := make([]string, 0, len(dimensions))
	for k, v := range dimensions {
		if k == "" || k == "_aws" {
			return nil, fmt.Errorf("%w: dimension name %q", ErrInvalid, k)
		}
		if v == "" {
			return nil, fmt.Errorf("%w: dimension %s has no value", ErrInvalid, k)
		}
		names = append(names, k)
		obj[k] = v
	}
	sort.Strings(names)
	aggregated := make([]string, 0, len(names))
	for _, n := range names {
		if n != TableDimension {
			aggregated = append(aggregated, n)
		}
	}
	var perTable, shared []metricDef
	for _, m := range ms {
		if m.Name == "" || m.Name == "_aws" {
			return nil, fmt.Errorf("%w: metric name %q", ErrInvalid, m.Name)
		}
		if _, dup := obj[m.Name]; dup {
			return nil, fmt.Errorf("%w: name %s used twice", ErrInvalid, m.Name)
		}
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			return nil, fmt.Errorf("%w: metric %s value %v", ErrInvalid, m.Name, m.Value)
		}
		unit := m.Unit
		if unit == "" {
			unit = None
		}
		if !validUnit(unit) {
			return nil, fmt.Errorf("%w: metric %s unit %q (want one of %v)", ErrInvalid, m.Name, m.Unit, Units())
		}
		obj[m.Name] = m.Value
		def := metricDef{Name: m.Name, Unit: unit}
		switch m.Publish {
		case PerTable:
			perTable = append(perTable, def)
		case Aggregated:
			shared = append(shared, def)
		case LogOnly:
		default:
			return nil, fmt.Errorf("%w: metric %s publication %d", ErrInvalid, m.Name, m.Publish)
		}
	}
	if len(perTable) > 0 && len(aggregated) == len(names) {
		// No Table on the line: a per-table metric is published like
		// the others.
		shared, perTable = append(shared, perTable...), nil
	}
	var directives []directive
	if len(perTable) > 0 {
		directives = append(directives, directive{Namespace: e.namespace, Dimensions: [][]string{names}, Metrics: perTable})
	}
	if len(shared) > 0 {
		directives = append(directives, directive{Namespace: e.namespace, Dimensions: [][]string{aggregated}, Metrics: shared})
	}
	if len(directives) > 0 {
		obj["_aws"] = awsMeta{Timestamp: e.now().UnixMilli(), CloudWatchMetrics: directives}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("metrics: encode EMF line: %w", err)
	}
	return append(b, '\n'), nil
}

func validUnit(u string) bool {
	for _, v := range Units() {
		if u == v {
			return true
		}
	}
	return false
}
