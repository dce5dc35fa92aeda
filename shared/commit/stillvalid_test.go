package commit

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
)

func TestPromotes_OnlyIcebergsTypePromotions(t *testing.T) {
	cases := []struct {
		from, to iceberg.PrimitiveType
		want     bool
	}{
		{iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int32, true},
		{iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int64, true},
		{iceberg.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float64, true},
		{iceberg.DecimalTypeOf(9, 2), iceberg.DecimalTypeOf(12, 2), true},
		{iceberg.PrimitiveTypes.Date, iceberg.PrimitiveTypes.Timestamp, true},
		{iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int32, false},
		{iceberg.PrimitiveTypes.Float64, iceberg.PrimitiveTypes.Float32, false},
		{iceberg.DecimalTypeOf(12, 2), iceberg.DecimalTypeOf(9, 2), false},
		{iceberg.DecimalTypeOf(9, 2), iceberg.DecimalTypeOf(12, 3), false},
		{iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.String, false},
		{iceberg.PrimitiveTypes.String, iceberg.PrimitiveTypes.Binary, false},
	}
	for _, c := range cases {
		if got := promotes(c.from, c.to); got != c.want {
			t.Errorf("promotes(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

// TestCheckStillValid_DecidesByFieldID: the new files were written at
// schema 0. Renames, drops, additions and promotions since keep them
// valid; a type change that is not a promotion, a required column they
// lack without a default, or a removed spec do not.
func TestCheckStillValid_DecidesByFieldID(t *testing.T) {
	written := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "note", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "attrs", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 5, Name: "a", Type: iceberg.PrimitiveTypes.Float32},
		}}},
	)
	cases := []struct {
		name  string
		now   *iceberg.Schema
		valid bool
	}{
		{"rename, drop, add, promote", iceberg.NewSchema(1,
			iceberg.NestedField{ID: 1, Name: "key", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 2, Name: "qty", Type: iceberg.PrimitiveTypes.Int64},
			iceberg.NestedField{ID: 6, Name: "note", Type: iceberg.PrimitiveTypes.String},
			iceberg.NestedField{ID: 4, Name: "attrs", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 5, Name: "x", Type: iceberg.PrimitiveTypes.Float64},
			}}},
		), true},
		{"a type changed without promotion", iceberg.NewSchema(1,
			iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 2, Name: "qty", Type: iceberg.PrimitiveTypes.String},
		), false},
		{"a nested type narrowed", iceberg.NewSchema(1,
			iceberg.NestedField{ID: 4, Name: "attrs", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 5, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
			}}},
		), false},
		{"a struct became a primitive", iceberg.NewSchema(1,
			iceberg.NestedField{ID: 4, Name: "attrs", Type: iceberg.PrimitiveTypes.String},
		), false},
		{"a required column without a default", iceberg.NewSchema(1,
			iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 7, Name: "must", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkSchemaStillValid(written, c.now)
			if c.valid && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !c.valid && !errors.Is(err, ErrAborted) {
				t.Fatalf("accepted (err %v), want ErrAborted", err)
			}
		})
	}
}

// TestClassify_TerminalVersusRetryable: errors no retry can fix end the job
// (ErrAborted); transient ones are returned as they are, for redelivery.
func TestClassify_TerminalVersusRetryable(t *testing.T) {
	terminal := []error{
		errors.New("cannot remove delete files that do not belong to the table: s3://b/t/data/x.parquet"),
		fmt.Errorf("load: %w", catalog.ErrNoSuchTable),
		fmt.Errorf("stage: %w: nope", table.ErrInvalidOperation),
	}
	for _, err := range terminal {
		if !errors.Is(classify(err), ErrAborted) {
			t.Errorf("classify(%v) is retryable, want terminal", err)
		}
	}
	retryable := []error{
		errors.New("dial tcp 10.0.0.1:443: connection reset by peer"),
		context.DeadlineExceeded,
		errors.New("ThrottlingException: rate exceeded"),
	}
	for _, err := range retryable {
		if got := classify(err); errors.Is(got, ErrAborted) || got != err {
			t.Errorf("classify(%v) = %v, want it unchanged (retryable)", err, got)
		}
	}
	if failClass(fmt.Errorf("%w: %w: x", ErrAborted, ErrConcurrent)) != lease.ClassConflict {
		t.Error("a concurrent-change abort is class conflict (its own, shorter backoff)")
	}
	if failClass(fmt.Errorf("%w before commit", errLeaseLost)) != "" {
		t.Error("a job whose lease another job took must not count towards the backoff")
	}
	if failClass(fmt.Errorf("%w: x", ErrInvariant)) != messages.FailInvariant {
		t.Error("an invariant failure is class invariant")
	}
}
