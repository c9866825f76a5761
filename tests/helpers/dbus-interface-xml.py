"""Print one interface of a D-Bus introspection document (stdin) in a stable form."""
import sys
import xml.etree.ElementTree as ET

name = sys.argv[1]
root = ET.fromstring(sys.stdin.read())
# sd-bus lists an interface once per vtable registered for it (the Manager has two:
# manager-dbus.c and template-import.c): merged here, in order.
found = [i for i in root.iter("interface") if i.get("name") == name]
for extra in found[1:]:
    for child in list(extra):
        found[0].append(child)
for iface in found[:1]:
    for el in iface.iter():
        el.tail = None
        el.text = None
    ET.indent(iface)
    print(ET.tostring(iface, encoding="unicode"))
    sys.exit(0)
sys.exit(f"no interface {name}")
