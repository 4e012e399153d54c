"""Protobuf message classes for the tests, built at run time from a descriptor with the `protobuf` package's
message factory (no `protoc` on the machine): the same classes `protoc --python_out` would generate for

    syntax = "proto3";
    package streamlet.test;
    message Order {
      enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }
      message Line { string sku = 1; int32 qty = 2; }
      string id = 1; double amount = 2; Address ship_to = 3; map<string, int64> counts = 4;
      repeated string tags = 5; optional string note = 6; Status status = 7; repeated Line lines = 8;
    }
    message Address { string street = 1; string city = 2; }
    message OrderKey { string id = 1; int32 region = 2; }

`FILE_PROTO` is that file's descriptor (what the Java side builds its messages from); `orders_v2` is a second
version of the file with a field added to Order (schema evolution)."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

_F = descriptor_pb2.FieldDescriptorProto


def _field(message: descriptor_pb2.DescriptorProto, name: str, number: int, kind: int, *,
           label: int = _F.LABEL_OPTIONAL, type_name: str = "") -> descriptor_pb2.FieldDescriptorProto:
    field = message.field.add(name=name, number=number, type=kind, label=label, json_name=_camel(name))
    if type_name:
        field.type_name = type_name
    return field


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _file(name: str, package: str, extra_field: bool) -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")
    order = fdp.message_type.add(name="Order")
    status = order.enum_type.add(name="Status")
    for number, label in enumerate(("NEW", "PAID", "SHIPPED")):
        status.value.add(name=label, number=number)
    line = order.nested_type.add(name="Line")
    _field(line, "sku", 1, _F.TYPE_STRING)
    _field(line, "qty", 2, _F.TYPE_INT32)
    entry = order.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    _field(entry, "value", 2, _F.TYPE_INT64)
    _field(order, "id", 1, _F.TYPE_STRING)
    _field(order, "amount", 2, _F.TYPE_DOUBLE)
    _field(order, "ship_to", 3, _F.TYPE_MESSAGE, type_name=f".{package}.Address")
    _field(order, "counts", 4, _F.TYPE_MESSAGE, label=_F.LABEL_REPEATED, type_name=f".{package}.Order.CountsEntry")
    _field(order, "tags", 5, _F.TYPE_STRING, label=_F.LABEL_REPEATED)
    note = _field(order, "note", 6, _F.TYPE_STRING)
    note.proto3_optional = True
    note.oneof_index = 0
    order.oneof_decl.add(name="_note")
    _field(order, "status", 7, _F.TYPE_ENUM, type_name=f".{package}.Order.Status")
    _field(order, "lines", 8, _F.TYPE_MESSAGE, label=_F.LABEL_REPEATED, type_name=f".{package}.Order.Line")
    if extra_field:
        _field(order, "channel", 9, _F.TYPE_STRING)
    address = fdp.message_type.add(name="Address")
    _field(address, "street", 1, _F.TYPE_STRING)
    _field(address, "city", 2, _F.TYPE_STRING)
    key = fdp.message_type.add(name="OrderKey")
    _field(key, "id", 1, _F.TYPE_STRING)
    _field(key, "region", 2, _F.TYPE_INT32)
    return fdp


def _classes(fdp: descriptor_pb2.FileDescriptorProto) -> dict[str, type[Message]]:
    pool = descriptor_pool.DescriptorPool()
    file = pool.Add(fdp)
    del file
    found = pool.FindFileByName(fdp.name)
    return {name: message_factory.GetMessageClass(found.message_types_by_name[name])
            for name in ("Order", "Address", "OrderKey")}


FILE_PROTO = _file("streamlet/test/orders.proto", "streamlet.test", extra_field=False)
_V1 = _classes(FILE_PROTO)
Order = _V1["Order"]
Address = _V1["Address"]
OrderKey = _V1["OrderKey"]
OrderLine = Order.Line  # type: ignore[attr-defined]

FILE_PROTO_V2 = _file("streamlet/test/orders.proto", "streamlet.test", extra_field=True)
OrderV2 = _classes(FILE_PROTO_V2)["Order"]

# FILE_PROTO as .proto text: what a Java serde registers, and the form Apicurio's Java serde parses.
ORDERS_PROTO_TEXT = """syntax = "proto3";
package streamlet.test;

message Order {
  enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }
  message Line { string sku = 1; int32 qty = 2; }
  string id = 1;
  double amount = 2;
  Address ship_to = 3;
  map<string, int64> counts = 4;
  repeated string tags = 5;
  optional string note = 6;
  Status status = 7;
  repeated Line lines = 8;
}
message Address { string street = 1; string city = 2; }
message OrderKey { string id = 1; int32 region = 2; }
"""
