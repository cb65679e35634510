package connectrs.conformance;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Values;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

/**
 * The judge of the differential conformance test: reads one case per line
 * (JSON) on stdin and answers one JSON line per case on stdout with what
 * Apache Kafka Connect's own classes make of it. No logic of ours beyond
 * moving data between the protocol (conformance/README.md) and Kafka's
 * classes; Connect data travels as Kafka's JsonConverter envelopes
 * ({"schema":...,"payload":...}), read and written by Kafka's JsonConverter.
 */
public final class Judge {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    static {
        // Case lines may hold NaN/Infinity (float payloads). Floats are read
        // as doubles, not BigDecimal, so -0.0 keeps its sign (the test writes
        // every float as the exact decimal of its double).
        MAPPER.enable(JsonParser.Feature.ALLOW_NON_NUMERIC_NUMBERS);
        MAPPER.disable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
        MAPPER.enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS);
        // Keep decimals as written: `0.0` must stay a float, not become `0`.
        MAPPER.setNodeFactory(JsonNodeFactory.withExactBigDecimals(true));
        // Written back to Kafka's reader as bare NaN tokens (which it is
        // made to accept below), not as strings.
        MAPPER.configure(JsonWriteFeature.WRITE_NAN_AS_STRINGS.mappedFeature(), false);
    }

    /** Reads envelopes: schemas enabled, nulls kept as nulls. */
    private final JsonConverter reader = new JsonConverter();
    /** Writes answer envelopes: schemas enabled, nulls kept, base64 decimals. */
    private final JsonConverter writer = new JsonConverter();

    private Judge() throws Exception {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put("schemas.enable", "true");
        cfg.put("replace.null.with.default", "false");
        cfg.put("decimal.format", "BASE64");
        reader.configure(cfg, false);
        writer.configure(cfg, false);
        // Let the envelope reader accept NaN/Infinity number tokens and read
        // floats as doubles (its BigDecimals have no -0.0): the one way to
        // hand every double to Kafka's JsonConverter. Only the reader of case
        // envelopes is changed; the converters under test are Kafka's own.
        Field de = JsonConverter.class.getDeclaredField("deserializer");
        de.setAccessible(true);
        Object deserializer = de.get(reader);
        Field om = deserializer.getClass().getDeclaredField("objectMapper");
        om.setAccessible(true);
        ObjectMapper readerMapper = (ObjectMapper) om.get(deserializer);
        readerMapper.enable(JsonParser.Feature.ALLOW_NON_NUMERIC_NUMBERS);
        readerMapper.disable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
    }

    public static void main(String[] args) throws Exception {
        Judge judge = new Judge();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), false);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer = JsonNodeFactory.instance.objectNode();
            try {
                JsonNode c = MAPPER.readTree(line);
                answer.set("id", c.get("id"));
                judge.answer(c, answer);
            } catch (Throwable t) {
                answer.put("ok", false);
                answer.put("harness_error", describe(t));
            }
            out.println(MAPPER.writeValueAsString(answer));
            out.flush();
        }
    }

    private void answer(JsonNode c, ObjectNode answer) throws Exception {
        String kind = c.get("kind").asText();
        try {
            switch (kind) {
                case "json.from": {
                    SchemaAndValue sv = readEnvelope(c.get("input"));
                    JsonConverter conv = new JsonConverter();
                    conv.configure(config(c.get("config")), c.path("is_key").asBoolean(false));
                    putBytes(answer, conv.fromConnectData(c.path("topic").asText("t"), sv.schema(), sv.value()));
                    break;
                }
                case "json.to": {
                    JsonConverter conv = new JsonConverter();
                    conv.configure(config(c.get("config")), c.path("is_key").asBoolean(false));
                    SchemaAndValue sv = conv.toConnectData(c.path("topic").asText("t"), bytes(c.get("b64")));
                    answer.set("result", envelope(sv.schema(), sv.value()));
                    break;
                }
                case "smt": {
                    SinkRecord rec = readRecord(c.get("record"));
                    @SuppressWarnings("unchecked")
                    Transformation<SinkRecord> t = (Transformation<SinkRecord>) Class.forName(c.get("class").asText())
                            .getDeclaredConstructor().newInstance();
                    t.configure(config(c.get("config")));
                    SinkRecord result = t.apply(rec);
                    answer.set("record", result == null ? JsonNodeFactory.instance.nullNode() : writeRecord(result));
                    t.close();
                    break;
                }
                case "predicate": {
                    SinkRecord rec = readRecord(c.get("record"));
                    @SuppressWarnings("unchecked")
                    Predicate<SinkRecord> p = (Predicate<SinkRecord>) Class.forName(c.get("class").asText())
                            .getDeclaredConstructor().newInstance();
                    p.configure(config(c.get("config")));
                    answer.put("result", p.test(rec));
                    p.close();
                    break;
                }
                case "config": {
                    Object plugin = Class.forName(c.get("class").asText()).getDeclaredConstructor().newInstance();
                    if (plugin instanceof Transformation) {
                        ((Transformation<?>) plugin).configure(config(c.get("config")));
                    } else {
                        ((Predicate<?>) plugin).configure(config(c.get("config")));
                    }
                    break;
                }
                case "values.to_string": {
                    SchemaAndValue sv = readEnvelope(c.get("input"));
                    String s = Values.convertToString(sv.schema(), sv.value());
                    answer.set("result", s == null ? JsonNodeFactory.instance.nullNode() : JsonNodeFactory.instance.textNode(s));
                    break;
                }
                case "java.to_string": {
                    // What Kafka's FileStreamSink prints for a record value.
                    SchemaAndValue sv = readEnvelope(c.get("input"));
                    answer.set("result", JsonNodeFactory.instance.textNode(String.valueOf(sv.value())));
                    break;
                }
                case "values.parse": {
                    SchemaAndValue sv = Values.parseString(c.get("text").isNull() ? null : c.get("text").asText());
                    answer.set("result", sv == null ? envelope(null, null) : envelope(sv.schema(), sv.value()));
                    break;
                }
                case "header.from": {
                    SchemaAndValue sv = readEnvelope(c.get("input"));
                    SimpleHeaderConverter h = new SimpleHeaderConverter();
                    h.configure(new HashMap<>());
                    putBytes(answer, h.fromConnectHeader("t", c.path("key").asText("h"), sv.schema(), sv.value()));
                    break;
                }
                case "header.to": {
                    SimpleHeaderConverter h = new SimpleHeaderConverter();
                    h.configure(new HashMap<>());
                    SchemaAndValue sv = h.toConnectHeader("t", c.path("key").asText("h"), bytes(c.get("b64")));
                    answer.set("result", sv == null ? envelope(null, null) : envelope(sv.schema(), sv.value()));
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown case kind " + kind);
            }
            answer.put("ok", true);
        } catch (HarnessException e) {
            throw e;
        } catch (Throwable t) {
            answer.put("ok", false);
            ObjectNode err = answer.putObject("error");
            err.put("class", t.getClass().getName());
            err.put("message", describe(t));
        }
    }

    /** The message of t and its causes. */
    private static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable e = t; e != null; e = e.getCause()) {
            if (sb.length() > 0) {
                sb.append(" | caused by ");
                sb.append(e.getClass().getName()).append(": ");
            }
            sb.append(e.getMessage());
            if (e.getCause() == e) {
                break;
            }
        }
        if (t instanceof HarnessException || t instanceof NullPointerException && t.getMessage() == null) {
            StringWriter sw = new StringWriter();
            t.printStackTrace(new PrintWriter(sw));
            sb.append(" ").append(sw.toString().replace('\n', ' '));
        }
        return sb.toString();
    }

    /** A failure of the harness itself (a malformed case), not of Kafka. */
    private static final class HarnessException extends RuntimeException {
        HarnessException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private static Map<String, Object> config(JsonNode node) {
        Map<String, Object> m = new HashMap<>();
        if (node != null) {
            Iterator<Map.Entry<String, JsonNode>> it = node.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                m.put(e.getKey(), e.getValue().asText());
            }
        }
        return m;
    }

    private static byte[] bytes(JsonNode b64) {
        return b64 == null || b64.isNull() ? null : Base64.getDecoder().decode(b64.asText());
    }

    private static void putBytes(ObjectNode answer, byte[] bytes) {
        if (bytes == null) {
            answer.putNull("b64");
            return;
        }
        answer.put("b64", Base64.getEncoder().encodeToString(bytes));
        answer.put("text", new String(bytes, StandardCharsets.UTF_8));
    }

    /** Connect data from an envelope, by Kafka's JsonConverter. */
    private SchemaAndValue readEnvelope(JsonNode envelope) {
        try {
            return reader.toConnectData("t", MAPPER.writeValueAsBytes(envelope));
        } catch (Exception e) {
            throw new HarnessException("Kafka's JsonConverter cannot read the case's envelope " + envelope, e);
        }
    }

    /**
     * Connect data as an envelope, by Kafka's JsonConverter. When Kafka's
     * converter cannot write what Kafka's own SMT or Values produced (a
     * schemaless java.util.Date from TimestampConverter, a map schema without
     * key schema from Values.parseString, a BOOLEAN schema named Date from
     * Cast), the envelope is {"schema": asJsonSchema(schema), "payload": the
     * value written schemaless with each java.util.Date as its epoch millis
     * and each BigDecimal as its toString(), "fallback": the converter's
     * error}.
     */
    private JsonNode envelope(Schema schema, Object value) throws Exception {
        byte[] bytes;
        try {
            bytes = writer.fromConnectData("t", schema, value);
        } catch (RuntimeException e) {
            ObjectNode o = JsonNodeFactory.instance.objectNode();
            o.set("schema", schema == null ? JsonNodeFactory.instance.nullNode() : writer.asJsonSchema(schema));
            byte[] payload = writer.fromConnectData("t", null, plain(value));
            o.set("payload", payload == null ? JsonNodeFactory.instance.nullNode() : MAPPER.readTree(payload).get("payload"));
            o.put("fallback", describe(e));
            return o;
        }
        if (bytes == null) {
            // No schema and a null value: Kafka writes null bytes.
            ObjectNode o = JsonNodeFactory.instance.objectNode();
            o.putNull("schema");
            o.putNull("payload");
            return o;
        }
        return MAPPER.readTree(bytes);
    }

    /** value with Struct as Map, java.util.Date as Long millis, BigDecimal as String. */
    private static Object plain(Object value) {
        if (value instanceof java.util.Date) {
            return ((java.util.Date) value).getTime();
        }
        if (value instanceof java.math.BigDecimal) {
            return value.toString();
        }
        if (value instanceof org.apache.kafka.connect.data.Struct) {
            org.apache.kafka.connect.data.Struct st = (org.apache.kafka.connect.data.Struct) value;
            Map<Object, Object> m = new java.util.LinkedHashMap<>();
            for (org.apache.kafka.connect.data.Field f : st.schema().fields()) {
                m.put(f.name(), plain(st.getWithoutDefault(f.name())));
            }
            return m;
        }
        if (value instanceof java.util.List) {
            java.util.List<Object> l = new java.util.ArrayList<>();
            for (Object o : (java.util.List<?>) value) {
                l.add(plain(o));
            }
            return l;
        }
        if (value instanceof Map) {
            Map<Object, Object> m = new java.util.LinkedHashMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
                m.put(plain(e.getKey()), plain(e.getValue()));
            }
            return m;
        }
        return value;
    }

    private SinkRecord readRecord(JsonNode r) {
        SchemaAndValue key = readEnvelope(r.get("key"));
        SchemaAndValue value = readEnvelope(r.get("value"));
        ConnectHeaders headers = new ConnectHeaders();
        for (JsonNode h : r.path("headers")) {
            SchemaAndValue hv = readEnvelope(h.get("value"));
            headers.add(h.get("key").asText(), hv);
        }
        JsonNode ts = r.get("timestamp");
        Long timestamp = ts == null || ts.isNull() ? null : ts.asLong();
        return new SinkRecord(r.get("topic").asText(), r.path("partition").asInt(0),
                key.schema(), key.value(), value.schema(), value.value(),
                r.path("offset").asLong(0), timestamp,
                timestamp == null ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME, headers);
    }

    private JsonNode writeRecord(SinkRecord r) throws Exception {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("topic", r.topic());
        if (r.kafkaPartition() == null) {
            o.putNull("partition");
        } else {
            o.put("partition", r.kafkaPartition());
        }
        if (r.timestamp() == null) {
            o.putNull("timestamp");
        } else {
            o.put("timestamp", r.timestamp());
        }
        o.set("key", envelope(r.keySchema(), r.key()));
        o.set("value", envelope(r.valueSchema(), r.value()));
        ArrayNode hs = o.putArray("headers");
        for (Header h : r.headers()) {
            ObjectNode hn = hs.addObject();
            hn.put("key", h.key());
            hn.set("value", envelope(h.schema(), h.value()));
        }
        return o;
    }
}
