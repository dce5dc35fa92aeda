// Package tracing is icekeeper's one seam to a tracer: AWS X-Ray, through
// the daemon Lambda runs beside a function with active tracing.
//
// It writes X-Ray segment documents itself, as the AWS X-Ray Developer
// Guide specifies them ("Sending trace data to AWS X-Ray", "AWS X-Ray
// segment documents"): JSON over UDP to the daemon
// (AWS_XRAY_DAEMON_ADDRESS), each datagram the header
// {"format":"json","version":1}, a newline and one document. It used the
// X-Ray SDK for Go, which is in maintenance mode since 2026-02-25 and
// reaches end of support on 2027-02-25 (the guide's "X-Ray SDK and daemon
// end of support timeline"), and which links the AWS SDK for Go v1 (past
// its own end of support) and cost each function's cold start about 6 ms
// of package initialisation. Swapping this for OpenTelemetry touches this
// package only.
//
// A Tracer wraps each phase of a stage (plan, read, write, commit) in a
// subsegment, and each AWS SDK call in a subsegment of its own (namespace
// "aws", with the operation, region and request id) whose id it passes on
// in the X-Amzn-Trace-Id header. In Lambda the function's segment is
// Lambda's: the invocation's trace header (Root, Parent, Sampled) names
// it, and subsegments are sent as independent documents with that parent;
// an invocation Lambda did not sample sends nothing. Outside Lambda it is
// off unless ICEKEEPER_XRAY=true, and off every call is a no-op. A phase
// outside any traced invocation runs untraced.
package tracing

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Phases.
const (
	PhasePlan   = "plan"
	PhaseRead   = "read"
	PhaseWrite  = "write"
	PhaseCommit = "commit"
)

// HeaderName is the trace header AWS services read (and Lambda sets on
// each invocation, which aws-lambda-go puts in the context under
// lambdaContextKey and in _X_AMZN_TRACE_ID).
const HeaderName = "X-Amzn-Trace-Id"

// lambdaContextKey is the context key aws-lambda-go stores the
// invocation's trace header under (an untyped string: its choice).
const lambdaContextKey = "x-amzn-trace-id"

// maxCause is the most bytes of an error a document carries.
const maxCause = 8 << 10

// defaultDaemon is where the daemon listens unless AWS_XRAY_DAEMON_ADDRESS
// says otherwise.
const defaultDaemon = "127.0.0.1:2000"

// Tracer traces phases.
type Tracer struct {
	d *daemon // nil: off
}

// daemon sends documents to the X-Ray daemon.
type daemon struct {
	mu   sync.Mutex
	conn net.Conn
}

// FromEnv returns a tracer that is on when running in Lambda with active
// tracing (_X_AMZN_TRACE_ID or AWS_XRAY_DAEMON_ADDRESS set) or when
// ICEKEEPER_XRAY=true, and off otherwise. A daemon address that cannot be
// resolved leaves it off.
func FromEnv() Tracer {
	on := os.Getenv("ICEKEEPER_XRAY") == "true" ||
		(os.Getenv("AWS_LAMBDA_FUNCTION_NAME") != "" && (os.Getenv("_X_AMZN_TRACE_ID") != "" || os.Getenv("AWS_XRAY_DAEMON_ADDRESS") != ""))
	if !on {
		return Tracer{}
	}
	conn, err := net.Dial("udp", daemonAddress(os.Getenv("AWS_XRAY_DAEMON_ADDRESS")))
	if err != nil {
		return Tracer{}
	}
	return Tracer{d: &daemon{conn: conn}}
}

// daemonAddress is the UDP address in AWS_XRAY_DAEMON_ADDRESS: host:port,
// or "tcp:host:port udp:host:port" (the daemon's two listeners; segments
// go to the UDP one).
func daemonAddress(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return defaultDaemon
	}
	for _, f := range strings.Fields(v) {
		if a, ok := strings.CutPrefix(f, "udp:"); ok {
			return a
		}
	}
	return v
}

// On reports whether tracing is on.
func (t Tracer) On() bool { return t.d != nil }

// Phase runs fn in a subsegment named for the phase.
func (t Tracer) Phase(ctx context.Context, name string, fn func(context.Context) error) error {
	s := t.start(ctx, name, false)
	if s == nil {
		return fn(ctx)
	}
	err := fn(context.WithValue(ctx, spanKey{}, s))
	s.end(err)
	return err
}

// Annotate records a searchable key on the current (sub)segment.
func (t Tracer) Annotate(ctx context.Context, key, value string) {
	if s, ok := ctx.Value(spanKey{}).(*span); ok && t.On() {
		s.mu.Lock()
		if s.annotations == nil {
			s.annotations = map[string]any{}
		}
		s.annotations[key] = value
		s.mu.Unlock()
	}
}

// TraceID is the current trace id, for logs ("" when off or untraced).
func (t Tracer) TraceID(ctx context.Context) string {
	if !t.On() {
		return ""
	}
	return parentOf(ctx).traceID
}

// Begin starts a root segment of a new trace (for tests and non-Lambda
// hosts that trace); the returned function ends and sends it.
func (t Tracer) Begin(ctx context.Context, name string) (context.Context, func()) {
	s := t.start(ctx, name, true)
	if s == nil {
		return ctx, func() {}
	}
	return context.WithValue(ctx, spanKey{}, s), func() { s.end(nil) }
}

// InstrumentAWS adds a subsegment for every AWS call made with cfg, and
// passes the trace on to the service in the X-Amzn-Trace-Id header.
func (t Tracer) InstrumentAWS(cfg *aws.Config) {
	if t.On() {
		cfg.APIOptions = append(cfg.APIOptions, t.awsMiddleware)
	}
}

// parent is where a new span hangs: a trace and the span it is a child of.
type parent struct {
	traceID, id string
	sampled     bool
}

// parentOf is the context's current span, or the Lambda invocation's trace
// header (the context's, else the environment's), or nothing.
func parentOf(ctx context.Context) parent {
	if s, ok := ctx.Value(spanKey{}).(*span); ok {
		return parent{traceID: s.traceID, id: s.id, sampled: s.sampled}
	}
	h, _ := ctx.Value(lambdaContextKey).(string)
	if h == "" && os.Getenv("AWS_LAMBDA_FUNCTION_NAME") != "" {
		h = os.Getenv("_X_AMZN_TRACE_ID")
	}
	return parseHeader(h)
}

// parseHeader reads "Root=1-...;Parent=...;Sampled=1" (the guide's
// "Tracing header"). Without Sampled=1 nothing is sent.
func parseHeader(h string) parent {
	var p parent
	for _, kv := range strings.Split(h, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "Root":
			p.traceID = v
		case "Parent":
			p.id = v
		case "Sampled":
			p.sampled = v == "1"
		}
	}
	if p.traceID == "" || p.id == "" {
		return parent{}
	}
	return p
}

type spanKey struct{}

// span is one segment or subsegment being recorded.
type span struct {
	d        *daemon
	name     string
	id       string
	traceID  string
	parentID string // "": a segment
	sampled  bool
	start    time.Time

	mu          sync.Mutex
	annotations map[string]any
	namespace   string
	aws         map[string]any
	status      int
}

// start begins a subsegment of the context's parent, or with root a
// segment of a new trace; nil when off or untraced.
func (t Tracer) start(ctx context.Context, name string, root bool) *span {
	if !t.On() {
		return nil
	}
	s := &span{d: t.d, name: name, id: randomHex(8), start: time.Now()}
	if root {
		s.traceID = fmt.Sprintf("1-%08x-%s", s.start.Unix(), randomHex(12))
		s.sampled = true
		return s
	}
	p := parentOf(ctx)
	if p.traceID == "" {
		return nil
	}
	s.traceID, s.parentID, s.sampled = p.traceID, p.id, p.sampled
	return s
}

// document is a segment document with the fields icekeeper sets.
type document struct {
	Name        string         `json:"name"`
	ID          string         `json:"id"`
	TraceID     string         `json:"trace_id"`
	ParentID    string         `json:"parent_id,omitempty"`
	Type        string         `json:"type,omitempty"`
	StartTime   float64        `json:"start_time"`
	EndTime     float64        `json:"end_time"`
	Namespace   string         `json:"namespace,omitempty"`
	Annotations map[string]any `json:"annotations,omitempty"`
	AWS         map[string]any `json:"aws,omitempty"`
	HTTP        *httpInfo      `json:"http,omitempty"`
	Error       bool           `json:"error,omitempty"`
	Throttle    bool           `json:"throttle,omitempty"`
	Fault       bool           `json:"fault,omitempty"`
	Cause       *cause         `json:"cause,omitempty"`
}

type httpInfo struct {
	Response struct {
		Status int `json:"status"`
	} `json:"response"`
}

type cause struct {
	Exceptions []exception `json:"exceptions"`
}

type exception struct {
	ID      string `json:"id"`
	Message string `json:"message"`
}

// end records the span's end (err, if any, as its cause) and sends it.
// A 4xx response is an error, 429 also a throttle, 5xx a fault, any other
// failure a fault (the guide's "Errors and exceptions").
func (s *span) end(err error) {
	if !s.sampled {
		return
	}
	s.mu.Lock()
	doc := document{Name: s.name, ID: s.id, TraceID: s.traceID, ParentID: s.parentID, StartTime: seconds(s.start), EndTime: seconds(time.Now()),
		Namespace: s.namespace, Annotations: s.annotations, AWS: s.aws}
	status := s.status
	s.mu.Unlock()
	if s.parentID != "" {
		doc.Type = "subsegment"
	}
	if status > 0 {
		doc.HTTP = &httpInfo{}
		doc.HTTP.Response.Status = status
	}
	switch {
	case status == 429:
		doc.Error, doc.Throttle = true, true
	case status >= 400 && status < 500:
		doc.Error = true
	case status >= 500:
		doc.Fault = true
	case err != nil:
		doc.Fault = true
	}
	if err != nil {
		// A document must fit one datagram (64 KB): the cause is cut.
		msg := err.Error()
		if len(msg) > maxCause {
			msg = msg[:maxCause] + "..."
		}
		doc.Cause = &cause{Exceptions: []exception{{ID: randomHex(8), Message: msg}}}
	}
	s.d.send(doc)
}

// send writes one document to the daemon; a failure loses the trace, not
// the work.
func (d *daemon) send(doc document) {
	b, err := json.Marshal(doc)
	if err != nil {
		return
	}
	msg := append([]byte(`{"format":"json","version":1}`+"\n"), b...)
	d.mu.Lock()
	_, _ = d.conn.Write(msg)
	d.mu.Unlock()
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func randomHex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return hex.EncodeToString(b)
}

// awsMiddleware adds the AWS call subsegment: begun after the client's
// initialize step (service, operation and region are known), given the
// response's status and request id, and its id sent as the call's parent
// in the trace header of every attempt.
func (t Tracer) awsMiddleware(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("IcekeeperTraceCall", func(
		ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		s := t.start(ctx, awsmiddleware.GetServiceID(ctx), false)
		if s == nil {
			return next.HandleInitialize(ctx, in)
		}
		s.namespace = "aws"
		s.aws = map[string]any{"operation": awsmiddleware.GetOperationName(ctx), "region": awsmiddleware.GetRegion(ctx)}
		out, md, err := next.HandleInitialize(context.WithValue(ctx, spanKey{}, s), in)
		s.end(err)
		return out, md, err
	}), middleware.After); err != nil {
		return err
	}
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("IcekeeperTraceHeader", func(
		ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		s, ok := ctx.Value(spanKey{}).(*span)
		if !ok {
			return next.HandleDeserialize(ctx, in)
		}
		if req, ok := in.Request.(*smithyhttp.Request); ok {
			sampled := "0"
			if s.sampled {
				sampled = "1"
			}
			req.Header.Set(HeaderName, "Root="+s.traceID+";Parent="+s.id+";Sampled="+sampled)
		}
		out, md, err := next.HandleDeserialize(ctx, in)
		if resp, ok := out.RawResponse.(*smithyhttp.Response); ok {
			s.mu.Lock()
			s.status = resp.StatusCode
			if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok {
				s.aws["request_id"] = id
			}
			if id := resp.Header.Get("X-Amz-Id-2"); id != "" {
				s.aws["id_2"] = id
			}
			s.mu.Unlock()
		}
		return out, md, err
	}), middleware.Before)
}
