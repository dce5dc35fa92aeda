// Package awsrequests counts the AWS requests that go through it, for the
// benchmark's bill: a reverse proxy on loopback in front of one endpoint
// serving every service (the emulator), used as AWS_ENDPOINT_URL. Each
// request is named by its service and operation: JSON-protocol requests
// (DynamoDB, SQS, EventBridge, ...) by their X-Amz-Target header, every
// other request as S3 (s3requests.Classify).
//
// Besides the count of each operation it measures what AWS bills by size:
// DynamoDB's request units (a write request unit per 1 KB written, a read
// request unit per 4 KB read, twice for transactions), SQS's 64 KB chunks
// and EventBridge's events (each entry of PutEvents, per 64 KB). Sizes are
// those of the requests' and responses' JSON, an upper bound of the item
// sizes DynamoDB meters (attribute names and values without the JSON's
// quoting and type tags).
package awsrequests

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/icekeeper/icekeeper/shared/harness/s3requests"
)

// Services, as the counts name them.
const (
	DynamoDB    = "dynamodb"
	SQS         = "sqs"
	EventBridge = "events"
	// Scheduler is EventBridge Scheduler (REST, told apart from S3 by its
	// signature's scope).
	Scheduler = "scheduler"
	S3        = "s3"
)

// targets maps an X-Amz-Target prefix to its service.
var targets = map[string]string{
	"DynamoDB_20120810": DynamoDB,
	"AmazonSQS":         SQS,
	"AWSEvents":         EventBridge,
}

// Op is one service's operation ("sqs:SendMessage").
type Op struct {
	Service, Name string
}

func (o Op) String() string { return o.Service + ":" + o.Name }

// Counts are what went through the proxy.
type Counts struct {
	// Calls counts each operation ("dynamodb:PutItem").
	Calls map[string]int64 `json:"calls"`
	// WriteUnits and ReadUnits are DynamoDB's on-demand request units.
	WriteUnits float64 `json:"dynamodb_write_units"`
	ReadUnits  float64 `json:"dynamodb_read_units"`
	// SQSRequests are SQS's billed requests (a request per 64 KB chunk of
	// its payload).
	SQSRequests int64 `json:"sqs_requests"`
	// Events are EventBridge's billed events (an event per 64 KB of an
	// entry).
	Events int64 `json:"eventbridge_events"`
	// S3Keys counts S3's operations by the kind of key they name
	// ("s3:PutObject health/*/latest.json", KeyKind), to tell which of
	// the objects the functions keep costs the requests.
	S3Keys map[string]int64 `json:"s3_keys,omitempty"`
}

// Service sums the calls of one service.
func (c Counts) Service(service string) int64 {
	var n int64
	for op, k := range c.Calls {
		if strings.HasPrefix(op, service+":") {
			n += k
		}
	}
	return n
}

// Sorted lists the operations counted, by name.
func (c Counts) Sorted() []string {
	out := make([]string, 0, len(c.Calls))
	for op := range c.Calls {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}

// Add adds d to c.
func (c *Counts) Add(d Counts) {
	if c.Calls == nil {
		c.Calls = map[string]int64{}
	}
	for k, v := range d.Calls {
		c.Calls[k] += v
	}
	if len(d.S3Keys) > 0 && c.S3Keys == nil {
		c.S3Keys = map[string]int64{}
	}
	for k, v := range d.S3Keys {
		c.S3Keys[k] += v
	}
	c.WriteUnits += d.WriteUnits
	c.ReadUnits += d.ReadUnits
	c.SQSRequests += d.SQSRequests
	c.Events += d.Events
}

// Classify names a request's service and operation.
func Classify(r *http.Request) Op {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		prefix, name, _ := strings.Cut(t, ".")
		if s, ok := targets[prefix]; ok {
			return Op{s, name}
		}
		return Op{strings.ToLower(prefix), name}
	}
	if strings.Contains(r.Header.Get("Authorization"), "/"+Scheduler+"/aws4_request") {
		resource, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		return Op{Scheduler, r.Method + " " + resource}
	}
	return Op{S3, s3requests.Classify(r)}
}

// KeyKind names the kind of object a path-style S3 request's path
// ("/bucket/key") names: the key's segments after the first, with every
// segment holding a digit or a dot (a table's or job's name, a time
// stamp) but the last one's extension replaced by "*". So
// "/b/jobs/2f1c/descriptors/00001-a1.json" is "jobs/*/descriptors/*.json"
// and "/b/health/ns.t1/latest.json" is "health/*/latest.json".
func KeyKind(path string) string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(segs) < 2 {
		return ""
	}
	segs = segs[1:]
	for i := 1; i < len(segs); i++ {
		if !strings.ContainsAny(segs[i], "0123456789.") {
			continue
		}
		if i < len(segs)-1 {
			segs[i] = "*"
			continue
		}
		ext := ""
		if j := strings.LastIndexByte(segs[i], '.'); j >= 0 {
			ext = segs[i][j:]
		}
		if name := strings.TrimSuffix(segs[i], ext); strings.ContainsAny(name, "0123456789.") {
			segs[i] = "*" + ext
		}
	}
	return strings.Join(segs, "/")
}

// chunks64K is how many 64 KB chunks n bytes make (at least one).
func chunks64K(n int64) int64 { return max(1, (n+(64<<10)-1)/(64<<10)) }

// units is how many units of size n bytes make (at least one).
func units(n, size int64) float64 { return float64(max(1, (n+size-1)/size)) }

// meter adds what the call costs beyond its count to c.
func meter(c *Counts, op Op, req, resp []byte) {
	switch op.Service {
	case SQS:
		c.SQSRequests += chunks64K(int64(len(req)))
	case EventBridge:
		if op.Name != "PutEvents" {
			return
		}
		var in struct {
			Entries []json.RawMessage `json:"Entries"`
		}
		if json.Unmarshal(req, &in) != nil {
			return
		}
		for _, e := range in.Entries {
			c.Events += chunks64K(int64(len(e)))
		}
	case DynamoDB:
		switch op.Name {
		case "PutItem", "UpdateItem", "DeleteItem":
			c.WriteUnits += units(int64(len(req)), 1<<10)
		case "BatchWriteItem":
			c.WriteUnits += perItem(req, 1<<10)
		case "TransactWriteItems":
			c.WriteUnits += 2 * perItem(req, 1<<10)
		case "GetItem", "Query", "Scan":
			c.ReadUnits += units(int64(len(resp)), 4<<10)
		case "BatchGetItem":
			c.ReadUnits += perItem(resp, 4<<10)
		case "TransactGetItems":
			c.ReadUnits += 2 * perItem(resp, 4<<10)
		}
	}
}

// perItem is the units of a batch or transaction: each item of the
// request's or response's lists metered on its own.
func perItem(body []byte, size int64) float64 {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return units(int64(len(body)), size)
	}
	var n float64
	var walk func(any, int)
	walk = func(x any, depth int) {
		switch t := x.(type) {
		case []any:
			for _, e := range t {
				if depth <= 2 {
					b, _ := json.Marshal(e)
					n += units(int64(len(b)), size)
				}
			}
		case map[string]any:
			for _, e := range t {
				walk(e, depth+1)
			}
		}
	}
	walk(v, 0)
	return max(n, 1)
}

// Proxy is a counting reverse proxy.
type Proxy struct {
	// URL is the proxy's endpoint (use it as AWS_ENDPOINT_URL).
	URL  string
	stop func() error
	mu   sync.Mutex
	c    Counts
	// latency is held before a request of a service is forwarded, by
	// service (SetLatency).
	latency map[string]time.Duration
}

// SetLatency holds every request to service (S3, DynamoDB, ...) d before
// forwarding it (0: none), as the service's own response time would: the
// emulator answers in microseconds.
func (p *Proxy) SetLatency(service string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.latency == nil {
		p.latency = map[string]time.Duration{}
	}
	p.latency[service] = d
}

// Start serves a counting proxy to target on a free loopback port.
func Start(target string) (*Proxy, error) {
	p := &Proxy{c: Counts{Calls: map[string]int64{}, S3Keys: map[string]int64{}}}
	var err error
	p.URL, p.stop, err = s3requests.Serve(target, func(w http.ResponseWriter, r *http.Request, rp http.Handler) {
		op := Classify(r)
		var req []byte
		if op.Service != S3 && r.Body != nil {
			var err error
			if req, err = io.ReadAll(r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(req))
		}
		// Counted when it arrives (a client may read the whole response
		// and the counts be read before this handler returns); metered by
		// size when its response is through.
		p.mu.Lock()
		p.c.Calls[op.String()]++
		if op.Service == S3 {
			if kind := KeyKind(r.URL.Path); kind != "" {
				p.c.S3Keys[op.String()+" "+kind]++
			}
		}
		hold := p.latency[op.Service]
		p.mu.Unlock()
		if hold > 0 {
			select {
			case <-time.After(hold):
			case <-r.Context().Done():
			}
		}
		rec := &s3requests.ResponseCounter{ResponseWriter: w}
		if op.Service == DynamoDB {
			rec.Body = &bytes.Buffer{}
		}
		rp.ServeHTTP(rec, r)
		var resp []byte
		if rec.Body != nil {
			resp = rec.Body.Bytes()
		}
		p.mu.Lock()
		meter(&p.c, op, req, resp)
		p.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Counts returns what was counted since the start or the last Reset.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.c
	out.Calls = maps.Clone(p.c.Calls)
	out.S3Keys = maps.Clone(p.c.S3Keys)
	return out
}

// Reset zeroes the counts.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.c = Counts{Calls: map[string]int64{}, S3Keys: map[string]int64{}}
	p.mu.Unlock()
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.stop() }
