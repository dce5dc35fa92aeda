package bounds

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestDecode_ReadsTheSpecsBinaryForms(t *testing.T) {
	le32 := binary.LittleEndian.AppendUint32(nil, uint32(0xFFFFFFFE)) // -2
	le64 := binary.LittleEndian.AppendUint64(nil, uint64(1)<<40)
	f32 := binary.LittleEndian.AppendUint32(nil, math.Float32bits(-1.5))
	f64 := binary.LittleEndian.AppendUint64(nil, math.Float64bits(2.25))
	for _, tc := range []struct {
		name string
		k    Kind
		t    iceberg.Type
		b    []byte
		want Value
	}{
		{"int", Int, iceberg.PrimitiveTypes.Int32, le32, IntValue(-2)},
		{"long written as int", Int, iceberg.PrimitiveTypes.Int64, le32, IntValue(-2)},
		{"long", Int, iceberg.PrimitiveTypes.Int64, le64, IntValue(1 << 40)},
		{"float", Float, iceberg.PrimitiveTypes.Float32, f32, FloatValue(-1.5)},
		{"double written as float", Float, iceberg.PrimitiveTypes.Float64, f32, FloatValue(-1.5)},
		{"double", Float, iceberg.PrimitiveTypes.Float64, f64, FloatValue(2.25)},
		{"negative decimal", Float, iceberg.DecimalTypeOf(9, 2), []byte{0xFF, 0x38}, FloatValue(-2)}, // -200 unscaled
		{"string", Bytes, iceberg.PrimitiveTypes.String, []byte("abc"), Value{S: "abc"}},
	} {
		got, ok := Decode(tc.k, tc.t, tc.b)
		if !ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := Decode(Int, iceberg.PrimitiveTypes.Int64, []byte{1, 2, 3}); ok {
		t.Error("a 3-byte long bound read")
	}
}
