package icekeeper.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericAppenderFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.deletes.EqualityDeleteWriter;
import org.apache.iceberg.encryption.EncryptedOutputFile;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

/**
 * Equality deletes as Flink's upsert writes them: Iceberg Java's generic
 * Parquet writer, one delete file per partition holding only the equality
 * columns, committed in one RowDelta.
 *
 * <p>Request: {"op":"eqdelete","catalog":..,"table":"db.t","columns":["id"],
 * "rows":[{..}],"branch":..}. Each row names every partition source column
 * (so its partition can be computed) and every equality column. With
 * "global":true the file is written under the table's unpartitioned spec
 * (which must exist), so it applies to every partition.
 */
final class EqualityDeletes {
  private EqualityDeletes() {}

  static JsonNode write(Catalog catalog, JsonNode req) throws Exception {
    Table table = catalog.loadTable(TableIdentifier.parse(req.path("table").asText()));
    Schema schema = table.schema();
    Set<Integer> ids = new HashSet<>();
    List<Integer> idList = new ArrayList<>();
    for (JsonNode c : req.path("columns")) {
      Types.NestedField f = schema.findField(c.asText());
      if (f == null) {
        throw new IllegalArgumentException("no column " + c.asText());
      }
      ids.add(f.fieldId());
      idList.add(f.fieldId());
    }
    Schema deleteSchema = TypeUtil.select(schema, ids);
    PartitionSpec spec = table.spec();
    if (req.path("global").asBoolean(false)) {
      spec = null;
      for (PartitionSpec s : table.specs().values()) {
        if (s.isUnpartitioned()) {
          spec = s;
        }
      }
      if (spec == null) {
        throw new IllegalArgumentException("global delete: the table has no unpartitioned spec");
      }
    }
    int[] eqIds = idList.stream().mapToInt(Integer::intValue).toArray();
    GenericAppenderFactory factory = new GenericAppenderFactory(schema, spec, eqIds, deleteSchema, null);
    OutputFileFactory files =
        OutputFileFactory.builderFor(table, 1, System.nanoTime()).format(FileFormat.PARQUET).build();

    // Group the rows by partition.
    Map<PartitionKey, List<Record>> byPartition = new LinkedHashMap<>();
    InternalRecordWrapper wrapper = new InternalRecordWrapper(schema.asStruct());
    for (JsonNode r : req.path("rows")) {
      Record full = toRecord(schema, r);
      PartitionKey key = new PartitionKey(spec, schema);
      key.partition(wrapper.wrap(full));
      Record del = GenericRecord.create(deleteSchema);
      for (Types.NestedField f : deleteSchema.columns()) {
        del.setField(f.name(), full.getField(f.name()));
      }
      byPartition.computeIfAbsent(key.copy(), k -> new ArrayList<>()).add(del);
    }
    RowDelta delta = table.newRowDelta();
    String branch = req.path("branch").asText("");
    if (!branch.isEmpty()) {
      delta = delta.toBranch(branch);
    }
    ArrayNode out = JsonNodeFactory.instance.arrayNode();
    for (Map.Entry<PartitionKey, List<Record>> e : byPartition.entrySet()) {
      EncryptedOutputFile file =
          spec.isUnpartitioned() ? files.newOutputFile() : files.newOutputFile(spec, e.getKey());
      EqualityDeleteWriter<Record> w =
          factory.newEqDeleteWriter(file, FileFormat.PARQUET, spec.isUnpartitioned() ? null : e.getKey());
      try (w) {
        for (Record del : e.getValue()) {
          w.write(del);
        }
      }
      DeleteFile df = w.toDeleteFile();
      delta.addDeletes(df);
      out.add(df.location());
    }
    delta.commit();
    return out;
  }

  private static Record toRecord(Schema schema, JsonNode row) {
    Record rec = GenericRecord.create(schema);
    for (Types.NestedField f : schema.columns()) {
      JsonNode v = row.get(f.name());
      if (v == null || v.isNull()) {
        continue;
      }
      rec.setField(f.name(), value(f.type(), v));
    }
    return rec;
  }

  private static Object value(Type type, JsonNode v) {
    switch (type.typeId()) {
      case INTEGER:
        return v.asInt();
      case LONG:
        return v.asLong();
      case DOUBLE:
        return v.asDouble();
      case FLOAT:
        return (float) v.asDouble();
      case BOOLEAN:
        return v.asBoolean();
      case STRING:
        return v.asText();
      case DATE:
        return LocalDate.parse(v.asText());
      case TIMESTAMP:
        return ((Types.TimestampType) type).shouldAdjustToUTC()
            ? OffsetDateTime.parse(v.asText())
            : LocalDateTime.parse(v.asText());
      default:
        throw new IllegalArgumentException("eqdelete: column type " + type + " is not supported here");
    }
  }
}
