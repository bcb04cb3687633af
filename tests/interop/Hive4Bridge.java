// Test support for tests/interop/hive4.py: compiled at test time (javac, into a temp dir) against
// Hive 4.1's jars and called through py4j. It only moves values between JSON text and Hive's own
// objects in bulk (one py4j call per read or write instead of one per field); the ACID work is
// all Hive's: OrcInputFormat (AcidUtils.getAcidState, OrcRawRecordMerger) reads, and
// OrcOutputFormat's OrcRecordUpdater writes.

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.type.Date;
import org.apache.hadoop.hive.common.type.HiveChar;
import org.apache.hadoop.hive.common.type.HiveDecimal;
import org.apache.hadoop.hive.common.type.HiveVarchar;
import org.apache.hadoop.hive.common.type.Timestamp;
import org.apache.hadoop.hive.ql.io.AcidInputFormat;
import org.apache.hadoop.hive.ql.io.AcidOutputFormat;
import org.apache.hadoop.hive.ql.io.AcidUtils;
import org.apache.hadoop.hive.ql.io.BucketCodec;
import org.apache.hadoop.hive.ql.io.RecordIdentifier;
import org.apache.hadoop.hive.ql.io.RecordUpdater;
import org.apache.hadoop.hive.ql.io.orc.OrcInputFormat;
import org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat;
import org.apache.hadoop.hive.ql.io.orc.OrcStruct;
import org.apache.hadoop.hive.serde2.objectinspector.ListObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.MapObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorFactory;
import org.apache.hadoop.hive.serde2.objectinspector.PrimitiveObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.StructField;
import org.apache.hadoop.hive.serde2.objectinspector.StructObjectInspector;
import org.apache.hadoop.hive.serde2.typeinfo.CharTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.ListTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.MapTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.PrimitiveTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.StructTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;
import org.apache.hadoop.hive.serde2.typeinfo.VarcharTypeInfo;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;

public final class Hive4Bridge {
  private static final ObjectMapper JSON =
      JsonMapper.builder().enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS).build();

  private Hive4Bridge() {}

  /** A JobConf holding the entries of a JSON object of strings. */
  @SuppressWarnings("unchecked")
  public static JobConf jobConf(String entriesJson) throws Exception {
    JobConf job = new JobConf();
    for (Map.Entry<String, Object> e : ((Map<String, Object>) JSON.readValue(entriesJson, Map.class)).entrySet()) {
      job.set(e.getKey(), String.valueOf(e.getValue()));
    }
    return job;
  }

  /**
   * Reads every split OrcInputFormat makes for {@code job}; JSON list of
   * {@code [[writeId, bucketProperty, rowId], [col, ...], splitPath]} per row, in Hive's order.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  public static String read(JobConf job, String rowType) throws Exception {
    StructObjectInspector oi = (StructObjectInspector) OrcStruct.createObjectInspector(
        TypeInfoUtils.getTypeInfoFromTypeString(rowType));
    List<? extends StructField> fields = oi.getAllStructFieldRefs();
    OrcInputFormat format = new OrcInputFormat();
    List<Object> rows = new ArrayList<>();
    for (InputSplit split : format.getSplits(job, 1)) {
      RecordReader reader = format.getRecordReader(split, job, Reporter.NULL);
      try {
        if (!(reader instanceof AcidInputFormat.AcidRecordReader)) {
          throw new IllegalStateException("not an ACID read: OrcInputFormat returned a "
              + reader.getClass().getName() + " for " + split);
        }
        Object key = reader.createKey();
        Object value = reader.createValue();
        while (reader.next(key, value)) {
          RecordIdentifier id = ((AcidInputFormat.AcidRecordReader) reader).getRecordIdentifier();
          List<Object> row = new ArrayList<>();
          for (StructField f : fields) {
            row.add(plain(f.getFieldObjectInspector(), oi.getStructFieldData(value, f)));
          }
          List<Object> out = new ArrayList<>();
          out.add(List.of(id.getWriteId(), id.getBucketProperty(), id.getRowId()));
          out.add(row);
          rows.add(out);
        }
      } finally {
        reader.close();
      }
    }
    return JSON.writeValueAsString(rows);
  }

  /**
   * Writes ACID events with Hive's OrcRecordUpdater (OrcOutputFormat.getRecordUpdater) as one
   * statement of one write id. {@code eventsJson}: a JSON list of {@code [op, rowId, row]} with
   * op "insert" (rowId null), "update" or "delete" (rowId = [writeId, bucketProperty, rowId]; a
   * delete's row may be null). Returns JSON {"insert_file", "delete_file", "bucket_property"}.
   */
  @SuppressWarnings("unchecked")
  public static String write(String partitionDir, JobConf conf, String columnNames, String columnTypes,
      long writeId, int bucket, int statementId, String eventsJson) throws Exception {
    List<String> names = List.of(columnNames.split(","));
    List<TypeInfo> types = TypeInfoUtils.getTypeInfosFromTypeString(columnTypes);
    List<String> allNames = new ArrayList<>();
    List<ObjectInspector> allOis = new ArrayList<>();
    allNames.add("ROW__ID");
    allOis.add(RecordIdentifier.StructInfo.oi);
    for (int i = 0; i < names.size(); i++) {
      allNames.add(names.get(i));
      allOis.add(TypeInfoUtils.getStandardJavaObjectInspectorFromTypeInfo(types.get(i)));
    }
    Properties table = new Properties();
    table.setProperty("columns", columnNames);
    table.setProperty("columns.types", columnTypes);
    table.setProperty("transactional", "true");
    table.setProperty("transactional_properties", "default");
    Path root = new Path(partitionDir);
    AcidOutputFormat.Options options = new AcidOutputFormat.Options(conf)
        .inspector(ObjectInspectorFactory.getStandardStructObjectInspector(allNames, allOis))
        .recordIdColumn(0)
        .writingBase(false)
        .minimumWriteId(writeId)
        .maximumWriteId(writeId)
        .bucket(bucket)
        .statementId(statementId)
        .tableProperties(table)
        .reporter(Reporter.NULL)
        .finalDestination(root);
    RecordUpdater updater = new OrcOutputFormat().getRecordUpdater(root, options);
    boolean ok = false;
    try {
      for (List<Object> event : (List<List<Object>>) JSON.readValue(eventsJson, List.class)) {
        String op = (String) event.get(0);
        List<Object> rid = (List<Object>) event.get(1);
        List<Object> values = (List<Object>) event.get(2);
        Object[] row = new Object[names.size() + 1];
        if (rid != null) {
          row[0] = new Object[] {
            ((Number) rid.get(0)).longValue(), ((Number) rid.get(1)).intValue(), ((Number) rid.get(2)).longValue()};
        }
        for (int i = 0; i < names.size(); i++) {
          row[i + 1] = values == null ? null : java(types.get(i), values.get(i));
        }
        switch (op) {
          case "insert": updater.insert(writeId, row); break;
          case "update": updater.update(writeId, row); break;
          case "delete": updater.delete(writeId, row); break;
          default: throw new IllegalArgumentException("unknown event " + op);
        }
      }
      ok = true;
    } finally {
      updater.close(!ok);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("insert_file", AcidUtils.createFilename(root, options).toString());
    out.put("delete_file", AcidUtils.createFilename(root, options.clone().writingDeleteDelta(true)).toString());
    out.put("bucket_property", BucketCodec.V1.encode(options));
    return JSON.writeValueAsString(out);
  }

  // -- values ---------------------------------------------------------------------------------

  /** A Hive value as a JSON-friendly Java value (maps as lists of [key, value] pairs). */
  static Object plain(ObjectInspector oi, Object data) {
    if (data == null) {
      return null;
    }
    switch (oi.getCategory()) {
      case PRIMITIVE: {
        Object v = ((PrimitiveObjectInspector) oi).getPrimitiveJavaObject(data);
        if (v instanceof HiveDecimal || v instanceof Date || v instanceof Timestamp
            || v instanceof HiveVarchar) {
          return v.toString();
        }
        if (v instanceof HiveChar) {
          return ((HiveChar) v).getPaddedValue();
        }
        if (v instanceof byte[]) {
          return Base64.getEncoder().encodeToString((byte[]) v);
        }
        return v;
      }
      case LIST: {
        ListObjectInspector l = (ListObjectInspector) oi;
        List<Object> out = new ArrayList<>();
        for (Object x : l.getList(data)) {
          out.add(plain(l.getListElementObjectInspector(), x));
        }
        return out;
      }
      case MAP: {
        MapObjectInspector m = (MapObjectInspector) oi;
        List<Object> out = new ArrayList<>();
        for (Map.Entry<?, ?> e : m.getMap(data).entrySet()) {
          List<Object> pair = new ArrayList<>();
          pair.add(plain(m.getMapKeyObjectInspector(), e.getKey()));
          pair.add(plain(m.getMapValueObjectInspector(), e.getValue()));
          out.add(pair);
        }
        return out;
      }
      case STRUCT: {
        StructObjectInspector s = (StructObjectInspector) oi;
        List<Object> out = new ArrayList<>();
        for (StructField f : s.getAllStructFieldRefs()) {
          out.add(plain(f.getFieldObjectInspector(), s.getStructFieldData(data, f)));
        }
        return out;
      }
      default:
        throw new IllegalArgumentException("unsupported type " + oi.getTypeName());
    }
  }

  /** A JSON value (as Python's json module writes it) as Hive's standard Java object. */
  @SuppressWarnings("unchecked")
  static Object java(TypeInfo type, Object v) {
    if (v == null) {
      return null;
    }
    switch (type.getCategory()) {
      case PRIMITIVE:
        switch (((PrimitiveTypeInfo) type).getPrimitiveCategory()) {
          case BOOLEAN: return (Boolean) v;
          case BYTE: return ((Number) v).byteValue();
          case SHORT: return ((Number) v).shortValue();
          case INT: return ((Number) v).intValue();
          case LONG: return ((Number) v).longValue();
          case FLOAT: return ((Number) v).floatValue();
          case DOUBLE: return ((Number) v).doubleValue();
          case STRING: return (String) v;
          case VARCHAR: return new HiveVarchar((String) v, ((VarcharTypeInfo) type).getLength());
          case CHAR: return new HiveChar((String) v, ((CharTypeInfo) type).getLength());
          case DECIMAL: return HiveDecimal.create(v.toString());
          case DATE: return Date.valueOf((String) v);
          case TIMESTAMP: return Timestamp.valueOf((String) v);
          case BINARY: return Base64.getDecoder().decode((String) v);
          default: throw new IllegalArgumentException("unsupported type " + type);
        }
      case LIST: {
        List<Object> out = new ArrayList<>();
        for (Object x : (List<Object>) v) {
          out.add(java(((ListTypeInfo) type).getListElementTypeInfo(), x));
        }
        return out;
      }
      case MAP: {
        MapTypeInfo m = (MapTypeInfo) type;
        Map<Object, Object> out = new LinkedHashMap<>();
        for (List<Object> pair : (List<List<Object>>) v) {
          out.put(java(m.getMapKeyTypeInfo(), pair.get(0)), java(m.getMapValueTypeInfo(), pair.get(1)));
        }
        return out;
      }
      case STRUCT: {
        List<TypeInfo> fieldTypes = ((StructTypeInfo) type).getAllStructFieldTypeInfos();
        List<Object> in = (List<Object>) v;
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < fieldTypes.size(); i++) {
          out.add(java(fieldTypes.get(i), in.get(i)));
        }
        return out;
      }
      default:
        throw new IllegalArgumentException("unsupported type " + type);
    }
  }
}
