package io.streamlet.registryserdes;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import io.apicurio.registry.serde.avro.AvroKafkaDeserializer;
import io.apicurio.registry.serde.avro.AvroKafkaSerializer;
import io.apicurio.registry.serde.jsonschema.JsonSchemaKafkaDeserializer;
import io.apicurio.registry.serde.jsonschema.JsonSchemaKafkaSerializer;
import io.apicurio.registry.serde.protobuf.ProtobufKafkaDeserializer;
import io.apicurio.registry.serde.protobuf.ProtobufKafkaSerializer;
import io.streamlet.registryserdes.avro.Shipment;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericEnumSymbol;
import org.apache.avro.generic.GenericFixed;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Apicurio Registry's Java serdes (2.6.13.Final) configured for Confluent's wire format, as a filter: one
 * request per line on stdin, one JSON answer per line on stdout.
 *
 * <p>A request: {"registry": the registry's base URL, "format": "avro" | "protobuf" | "json", "topic": ...,
 * "isKey": bool, "schema": the Avro schema's JSON text (avro), "descriptor": a base64 FileDescriptorProto and
 * "message": the message's full name (protobuf), "values": values to serialize (Avro: plain JSON, a union's
 * branch by its value; Protobuf: its JSON mapping; JSON Schema: the JSON), "read": hex byte strings to
 * deserialize}. The answer: {"written": [hex of each value's bytes], "read": [each value read, as JSON]}, or
 * {"error": the exception}. Format "protobuf-body" reads plain Protobuf bodies (no framing, no registry) as the
 * named message. Format "avro-specific" writes and reads the generated specific record class Shipment
 * (src/main/avro/Shipment.avsc) instead of generic records.
 *
 * <p>The serializers look the schema up (they never register it): the subject the topic name strategy gives
 * (TOPIC-value or TOPIC-key, Apicurio's TopicIdStrategy) must have it registered, the way a deployment that
 * registers schemas ahead of time does.
 */
public final class SerdesMain {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer = JsonNodeFactory.instance.objectNode();
            try {
                answer = handle(JSON.readTree(line));
            } catch (Throwable e) {
                StringBuilder text = new StringBuilder();
                for (Throwable t = e; t != null; t = t.getCause()) {
                    text.append(t.getClass().getName()).append(": ").append(t.getMessage()).append(" / ");
                }
                answer.put("error", text.toString());
            }
            out.println(JSON.writeValueAsString(answer));
        }
    }

    static Map<String, Object> config(String registry, String format) {
        Map<String, Object> config = new HashMap<>();
        config.put("apicurio.registry.url", registry.replaceAll("/apis/ccompat/v[0-9]+/?$", "") + "/apis/registry/v2");
        // Confluent's framing: magic byte 0 and a 4-byte id (not Apicurio's 8-byte global id), no headers,
        // the id being the content id, which is the id of Confluent's API (/apis/ccompat) in Apicurio 2.6.
        config.put("apicurio.registry.id-handler", "io.apicurio.registry.serde.Legacy4ByteIdHandler");
        config.put("apicurio.registry.use-id", "contentId");
        config.put("apicurio.registry.headers.enabled", false);
        config.put("apicurio.registry.auto-register", false);
        config.put("apicurio.registry.find-latest", true);
        if (format.equals("protobuf")) {
            // Its check compares the registered .proto with the message's descriptor and reports fully
            // qualified type names (.pkg.Order.Status) as changed from the short ones (Status): off.
            config.put("apicurio.registry.serde.validation-enabled", false);
        }
        if (format.equals("json")) {
            config.put("apicurio.registry.serde.validation-enabled", true);
            config.put("apicurio.registry.deserializer.key.return-class", JsonNode.class.getName());
            config.put("apicurio.registry.deserializer.value.return-class", JsonNode.class.getName());
        }
        return config;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static ObjectNode handle(JsonNode request) throws Exception {
        String format = request.get("format").asText();
        String topic = request.get("topic").asText();
        boolean isKey = request.path("isKey").asBoolean(false);
        if (format.equals("protobuf-body")) {
            return readBodies(request);
        }
        Map<String, Object> config = config(request.get("registry").asText(), format);
        Serializer serializer;
        Deserializer deserializer;
        Schema avroSchema = null;
        Descriptor descriptor = null;
        switch (format) {
            case "avro" -> {
                serializer = new AvroKafkaSerializer<GenericRecord>();
                deserializer = new AvroKafkaDeserializer<GenericRecord>();
                if (request.has("schema")) {
                    avroSchema = new Schema.Parser().parse(request.get("schema").asText());
                }
            }
            case "avro-specific" -> {
                // The generated class io.streamlet.registryserdes.avro.Shipment, written and read as itself.
                serializer = new AvroKafkaSerializer<SpecificRecord>();
                deserializer = new AvroKafkaDeserializer<SpecificRecord>();
                config.put("apicurio.registry.use-specific-avro-reader", true);
                avroSchema = Shipment.getClassSchema();
            }
            case "protobuf" -> {
                serializer = new ProtobufKafkaSerializer<Message>();
                deserializer = new ProtobufKafkaDeserializer<DynamicMessage>();
                if (request.has("descriptor")) {
                    descriptor = descriptorOf(request);
                }
            }
            case "json" -> {
                serializer = new JsonSchemaKafkaSerializer<JsonNode>();
                deserializer = new JsonSchemaKafkaDeserializer<JsonNode>();
            }
            default -> throw new IllegalArgumentException("unknown format " + format);
        }
        serializer.configure(config, isKey);
        deserializer.configure(config, isKey);
        ObjectNode answer = JsonNodeFactory.instance.objectNode();
        ArrayNode written = answer.putArray("written");
        for (JsonNode value : request.path("values")) {
            Object data = switch (format) {
                case "avro" -> fromJson(avroSchema, value);
                case "avro-specific" -> {
                    Shipment shipment = (Shipment) SpecificData.get().deepCopy(avroSchema, fromJson(avroSchema, value));
                    yield shipment;
                }
                case "protobuf" -> {
                    DynamicMessage.Builder builder = DynamicMessage.newBuilder(descriptor);
                    JsonFormat.parser().merge(JSON.writeValueAsString(value), builder);
                    yield builder.build();
                }
                default -> value;
            };
            byte[] bytes = serializer.serialize(topic, data);
            written.add(HEX.formatHex(bytes));
        }
        ArrayNode read = answer.putArray("read");
        ArrayNode classes = answer.putArray("classes");
        for (JsonNode hex : request.path("read")) {
            Object value = deserializer.deserialize(topic, HEX.parseHex(hex.asText()));
            classes.add(value == null ? "null" : value.getClass().getName());
            read.add(switch (format) {
                case "avro", "avro-specific" -> toJson(value);
                case "protobuf" -> JSON.readTree(JsonFormat.printer().print((Message) value));
                default -> (JsonNode) value;
            });
        }
        serializer.close();
        deserializer.close();
        return answer;
    }

    /** Plain Protobuf bodies (no framing) parsed by protobuf-java as the named message, printed as JSON. */
    static ObjectNode readBodies(JsonNode request) throws Exception {
        Descriptor descriptor = descriptorOf(request);
        ObjectNode answer = JsonNodeFactory.instance.objectNode();
        ArrayNode read = answer.putArray("read");
        for (JsonNode hex : request.path("read")) {
            DynamicMessage message = DynamicMessage.parseFrom(descriptor, HEX.parseHex(hex.asText()));
            read.add(JSON.readTree(JsonFormat.printer().print(message)));
        }
        return answer;
    }

    static Descriptor descriptorOf(JsonNode request) throws Exception {
        FileDescriptorProto proto = FileDescriptorProto.parseFrom(
                Base64.getDecoder().decode(request.get("descriptor").asText()));
        FileDescriptor file = FileDescriptor.buildFrom(proto, new FileDescriptor[0]);
        return findMessage(file, request.get("message").asText());
    }

    static Descriptor findMessage(FileDescriptor file, String fullName) {
        for (Descriptor message : file.getMessageTypes()) {
            Descriptor found = findIn(message, fullName);
            if (found != null) {
                return found;
            }
        }
        throw new IllegalArgumentException("no message " + fullName);
    }

    static Descriptor findIn(Descriptor message, String fullName) {
        if (message.getFullName().equals(fullName)) {
            return message;
        }
        for (Descriptor nested : message.getNestedTypes()) {
            Descriptor found = findIn(nested, fullName);
            if (found != null) {
                return found;
            }
        }
        return null;
    }

    /** A plain JSON value as the Avro datum of `schema` (a union: the first branch the value fits). */
    static Object fromJson(Schema schema, JsonNode value) {
        switch (schema.getType()) {
            case NULL:
                if (!value.isNull()) {
                    throw new IllegalArgumentException("not null: " + value);
                }
                return null;
            case BOOLEAN:
                if (!value.isBoolean()) {
                    throw new IllegalArgumentException("not a boolean: " + value);
                }
                return value.asBoolean();
            case INT:
                if (!value.isIntegralNumber()) {
                    throw new IllegalArgumentException("not an int: " + value);
                }
                return value.asInt();
            case LONG:
                if (!value.isIntegralNumber()) {
                    throw new IllegalArgumentException("not a long: " + value);
                }
                return value.asLong();
            case FLOAT:
                return (float) value.asDouble();
            case DOUBLE:
                if (!value.isNumber()) {
                    throw new IllegalArgumentException("not a double: " + value);
                }
                return value.asDouble();
            case STRING:
                if (!value.isTextual()) {
                    throw new IllegalArgumentException("not a string: " + value);
                }
                return value.asText();
            case ENUM:
                return new GenericData.EnumSymbol(schema, value.asText());
            case ARRAY: {
                List<Object> items = new ArrayList<>();
                for (JsonNode item : value) {
                    items.add(fromJson(schema.getElementType(), item));
                }
                return new GenericData.Array<>(schema, items);
            }
            case MAP: {
                Map<String, Object> map = new java.util.LinkedHashMap<>();
                Iterator<Map.Entry<String, JsonNode>> fields = value.fields();
                while (fields.hasNext()) {
                    Map.Entry<String, JsonNode> field = fields.next();
                    map.put(field.getKey(), fromJson(schema.getValueType(), field.getValue()));
                }
                return map;
            }
            case RECORD: {
                if (!value.isObject()) {
                    throw new IllegalArgumentException("not a record: " + value);
                }
                GenericData.Record record = new GenericData.Record(schema);
                for (Schema.Field field : schema.getFields()) {
                    JsonNode item = value.get(field.name());
                    record.put(field.name(), item == null ? field.defaultVal() : fromJson(field.schema(), item));
                }
                return record;
            }
            case UNION: {
                for (Schema branch : schema.getTypes()) {
                    try {
                        return fromJson(branch, value);
                    } catch (IllegalArgumentException e) {
                        // the next branch
                    }
                }
                throw new IllegalArgumentException("no branch of " + schema + " fits " + value);
            }
            default:
                throw new IllegalArgumentException("unsupported Avro type " + schema.getType());
        }
    }

    /** An Avro datum as plain JSON (a union's value without its branch name). */
    static JsonNode toJson(Object datum) {
        JsonNodeFactory f = JsonNodeFactory.instance;
        if (datum == null) {
            return f.nullNode();
        }
        if (datum instanceof GenericRecord record) {
            ObjectNode node = f.objectNode();
            for (Schema.Field field : record.getSchema().getFields()) {
                node.set(field.name(), toJson(record.get(field.name())));
            }
            return node;
        }
        if (datum instanceof Map<?, ?> map) {
            ObjectNode node = f.objectNode();
            map.forEach((k, v) -> node.set(k.toString(), toJson(v)));
            return node;
        }
        if (datum instanceof List<?> list) {
            ArrayNode node = f.arrayNode();
            list.forEach(item -> node.add(toJson(item)));
            return node;
        }
        if (datum instanceof CharSequence || datum instanceof GenericEnumSymbol<?>) {
            return f.textNode(datum.toString());
        }
        if (datum instanceof Boolean b) {
            return f.booleanNode(b);
        }
        if (datum instanceof Integer i) {
            return f.numberNode(i);
        }
        if (datum instanceof Long l) {
            return f.numberNode(l);
        }
        if (datum instanceof Float x) {
            return f.numberNode(x);
        }
        if (datum instanceof Double d) {
            return f.numberNode(d);
        }
        if (datum instanceof ByteBuffer buffer) {
            return f.textNode(HEX.formatHex(buffer.array()));
        }
        if (datum instanceof GenericFixed fixed) {
            return f.textNode(HEX.formatHex(fixed.bytes()));
        }
        throw new IllegalArgumentException("unsupported Avro datum " + datum.getClass());
    }
}
