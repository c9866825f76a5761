"""Print one interface of a D-Bus introspection document (stdin) in a stable form."""
import sys
import xml.etree.ElementTree as ET

name = sys.argv[1]
root = ET.fromstring(sys.stdin.read())
for iface in root.iter("interface"):
    if iface.get("name") != name:
        continue
    for el in iface.iter():
        el.tail = None
        el.text = None
    ET.indent(iface)
    print(ET.tostring(iface, encoding="unicode"))
    sys.exit(0)
sys.exit(f"no interface {name}")
