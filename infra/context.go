package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// contextReader reads typed values from the CDK context and collects
// errors naming the key.
type contextReader struct {
	node constructs.Node
	errs []error
}

func (r *contextReader) get(key string) (any, bool) {
	v := r.node.TryGetContext(jsii.String(key))
	if v == nil {
		return nil, false
	}
	if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
		return nil, false
	}
	return v, true
}

func (r *contextReader) fail(key string, v any, want string) {
	r.errs = append(r.errs, fmt.Errorf("%w: %s=%v: want %s", ErrSettings, key, v, want))
}

func (r *contextReader) str(key string, dst *string) {
	v, ok := r.get(key)
	if !ok {
		return
	}
	s, isStr := v.(string)
	if !isStr {
		r.fail(key, v, "a string")
		return
	}
	*dst = strings.TrimSpace(s)
}

// list reads a comma-separated string or a JSON list of strings.
func (r *contextReader) list(key string, dst *string) {
	v, ok := r.get(key)
	if !ok {
		return
	}
	switch t := v.(type) {
	case string:
		*dst = t
	case []any:
		parts := make([]string, 0, len(t))
		for _, e := range t {
			s, isStr := e.(string)
			if !isStr {
				r.fail(key, v, "a list of strings")
				return
			}
			parts = append(parts, s)
		}
		*dst = strings.Join(parts, ",")
	default:
		r.fail(key, v, "a comma-separated string or a list of strings")
	}
}

func (r *contextReader) integer(key string, dst *int) {
	v, ok := r.get(key)
	if !ok {
		return
	}
	switch t := v.(type) {
	case float64:
		if t != float64(int(t)) {
			r.fail(key, v, "an integer")
			return
		}
		*dst = int(t)
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil {
			r.fail(key, v, "an integer")
			return
		}
		*dst = n
	default:
		r.fail(key, v, "an integer")
	}
}

func (r *contextReader) boolean(key string, dst *bool) {
	v, ok := r.get(key)
	if !ok {
		return
	}
	switch t := v.(type) {
	case bool:
		*dst = t
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(t))
		if err != nil {
			r.fail(key, v, "true or false")
			return
		}
		*dst = b
	default:
		r.fail(key, v, "true or false")
	}
}

// duration reads a Go duration ("15m") or a number of seconds.
func (r *contextReader) duration(key string, dst *time.Duration) {
	v, ok := r.get(key)
	if !ok {
		return
	}
	switch t := v.(type) {
	case float64:
		*dst = time.Duration(t * float64(time.Second))
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(t))
		if err != nil {
			r.fail(key, v, "a duration such as 15m or a number of seconds")
			return
		}
		*dst = d
	default:
		r.fail(key, v, "a duration such as 15m or a number of seconds")
	}
}

// object reads a JSON object of strings (or a JSON string holding one).
func (r *contextReader) object(key string, dst map[string]string) {
	v, ok := r.get(key)
	if !ok {
		return
	}
	if s, isStr := v.(string); isStr {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			r.fail(key, v, "a JSON object of strings")
			return
		}
		v = m
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		r.fail(key, v, "a JSON object of strings")
		return
	}
	for k, e := range m {
		switch t := e.(type) {
		case string:
			dst[k] = t
		case float64:
			dst[k] = strconv.FormatFloat(t, 'f', -1, 64)
		case bool:
			dst[k] = strconv.FormatBool(t)
		default:
			r.fail(key, v, "a JSON object of strings")
			return
		}
	}
}

// properties reads "k=v,k=v" (ICEKEEPER_CATALOG_PROPERTIES' form) or an
// object.
func (r *contextReader) properties(key string, dst map[string]string) {
	v, ok := r.get(key)
	if !ok {
		return
	}
	if s, isStr := v.(string); isStr && !strings.HasPrefix(strings.TrimSpace(s), "{") {
		for _, kv := range strings.Split(s, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			k, val, found := strings.Cut(kv, "=")
			if !found || strings.TrimSpace(k) == "" {
				r.fail(key, v, "k=v,k=v or a JSON object")
				return
			}
			dst[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
		return
	}
	r.object(key, dst)
}
