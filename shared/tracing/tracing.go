// Package tracing is icekeeper's one seam to a tracer. Today it is AWS X-Ray
// through github.com/aws/aws-xray-sdk-go, which is in maintenance mode and
// reaches end of support on 2027-02-25; nothing outside this package
// imports it, so swapping it for OpenTelemetry touches this file only.
//
// A Tracer wraps each phase of a stage (plan, read, write, commit) in a
// subsegment and instruments the AWS SDK clients. It is on in Lambda with
// active tracing (the runtime provides the segment and the daemon address)
// and off elsewhere (the CLI, the tests), where every call is a no-op.
package tracing

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/instrumentation/awsv2"
	"github.com/aws/aws-xray-sdk-go/strategy/ctxmissing"
	"github.com/aws/aws-xray-sdk-go/xray"
)

// Phases.
const (
	PhasePlan   = "plan"
	PhaseRead   = "read"
	PhaseWrite  = "write"
	PhaseCommit = "commit"
)

// Tracer traces phases.
type Tracer struct {
	on bool
}

// FromEnv returns a tracer that is on when running in Lambda with active
// tracing (_X_AMZN_TRACE_ID or AWS_XRAY_DAEMON_ADDRESS set) or when
// ICEKEEPER_XRAY=true, and off otherwise.
func FromEnv() Tracer {
	on := os.Getenv("ICEKEEPER_XRAY") == "true" ||
		(os.Getenv("AWS_LAMBDA_FUNCTION_NAME") != "" && (os.Getenv("_X_AMZN_TRACE_ID") != "" || os.Getenv("AWS_XRAY_DAEMON_ADDRESS") != ""))
	if on {
		// A phase outside any segment (an invocation the runtime did not
		// trace) is ignored, not fatal.
		_ = xray.Configure(xray.Config{DaemonAddr: os.Getenv("AWS_XRAY_DAEMON_ADDRESS"),
			ContextMissingStrategy: ctxmissing.NewDefaultIgnoreErrorStrategy()})
	}
	return Tracer{on: on}
}

// On reports whether tracing is on.
func (t Tracer) On() bool { return t.on }

// InstrumentAWS adds X-Ray subsegments for every AWS call made with cfg.
func (t Tracer) InstrumentAWS(cfg *aws.Config) {
	if t.on {
		awsv2.AWSV2Instrumentor(&cfg.APIOptions)
	}
}

// Phase runs fn in a subsegment named for the phase.
func (t Tracer) Phase(ctx context.Context, name string, fn func(context.Context) error) error {
	if !t.on {
		return fn(ctx)
	}
	return xray.Capture(ctx, name, fn)
}

// Annotate records a searchable key on the current (sub)segment.
func (t Tracer) Annotate(ctx context.Context, key, value string) {
	if !t.on {
		return
	}
	if seg := xray.GetSegment(ctx); seg != nil {
		_ = seg.AddAnnotation(key, value)
	}
}

// TraceID is the current trace id, for logs ("" when off).
func (t Tracer) TraceID(ctx context.Context) string {
	if !t.on {
		return ""
	}
	return xray.TraceID(ctx)
}

// Begin starts a root segment (for tests and non-Lambda hosts that trace).
func (t Tracer) Begin(ctx context.Context, name string) (context.Context, func()) {
	if !t.on {
		return ctx, func() {}
	}
	ctx, seg := xray.BeginSegment(ctx, name)
	return ctx, func() { seg.Close(nil) }
}
