"""The public service documents of the simulated iDRAC: ``$metadata`` (CSDL) and the OData
service document. Versions are those of the resources :mod:`labctl.sim.redfish.idrac` serves."""

from __future__ import annotations

SCHEMAS = "http://redfish.dmtf.org/schemas/v1"

# namespace -> (schema file, versioned namespace or None)
TYPES: dict[str, tuple[str, str | None]] = {
    "ServiceRoot": ("ServiceRoot_v1.xml", "ServiceRoot.v1_6_0"),
    "ComputerSystemCollection": ("ComputerSystemCollection_v1.xml", None),
    "ComputerSystem": ("ComputerSystem_v1.xml", "ComputerSystem.v1_12_0"),
    "ManagerCollection": ("ManagerCollection_v1.xml", None),
    "Manager": ("Manager_v1.xml", "Manager.v1_9_0"),
    "ChassisCollection": ("ChassisCollection_v1.xml", None),
    "Chassis": ("Chassis_v1.xml", "Chassis.v1_11_0"),
    "Power": ("Power_v1.xml", "Power.v1_6_0"),
    "Thermal": ("Thermal_v1.xml", "Thermal.v1_6_0"),
    "SessionService": ("SessionService_v1.xml", "SessionService.v1_1_8"),
    "SessionCollection": ("SessionCollection_v1.xml", None),
    "Session": ("Session_v1.xml", "Session.v1_3_0"),
    "Resource": ("Resource_v1.xml", "Resource.v1_11_0"),
    "Message": ("Message_v1.xml", "Message.v1_1_1"),
}


def odata_type(namespace: str) -> str:
    """``#ComputerSystem.v1_12_0.ComputerSystem`` for a namespace listed in :data:`TYPES`."""
    versioned = TYPES[namespace][1]
    return f"#{versioned or namespace}.{namespace}"


def odata_context(namespace: str) -> str:
    return f"/redfish/v1/$metadata#{namespace}.{namespace}"


def metadata_xml() -> str:
    refs = []
    for ns, (file, versioned) in TYPES.items():
        includes = f'    <edmx:Include Namespace="{ns}"/>\n'
        if versioned:
            includes += f'    <edmx:Include Namespace="{versioned}"/>\n'
        refs.append(f'  <edmx:Reference Uri="{SCHEMAS}/{file}">\n{includes}  </edmx:Reference>\n')
    refs.append(
        f'  <edmx:Reference Uri="{SCHEMAS}/RedfishExtensions_v1.xml">\n'
        '    <edmx:Include Namespace="RedfishExtensions.v1_0_0" Alias="Redfish"/>\n'
        "  </edmx:Reference>\n"
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">\n'
        + "".join(refs)
        + "  <edmx:DataServices>\n"
        '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">\n'
        '      <EntityContainer Name="Service" Extends="ServiceRoot.v1_6_0.ServiceContainer"/>\n'
        "    </Schema>\n"
        "  </edmx:DataServices>\n"
        "</edmx:Edmx>\n"
    )


def odata_service_document() -> dict[str, object]:
    def single(name: str, url: str) -> dict[str, str]:
        return {"kind": "Singleton", "name": name, "url": url}

    return {
        "@odata.context": "/redfish/v1/$metadata",
        "value": [
            single("Service", "/redfish/v1/"),
            single("Systems", "/redfish/v1/Systems"),
            single("Chassis", "/redfish/v1/Chassis"),
            single("Managers", "/redfish/v1/Managers"),
            single("SessionService", "/redfish/v1/SessionService"),
            single("Sessions", "/redfish/v1/SessionService/Sessions"),
        ],
    }
