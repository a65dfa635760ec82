"""Redfish error and message bodies the way iDRAC9 (firmware 4.x) writes them.

iDRAC wraps every failure in a ``Base.x.GeneralError`` whose ``@Message.ExtendedInfo`` carries the
real message: DMTF Base registry ids for protocol errors, iDRAC's own ids (``IDRAC.2.x.RAC0218``,
``PSU501``, ``SYS415``) for device conditions. Clients (the DMTF library among them) read
``error["@Message.ExtendedInfo"][0]["Message"]``.
"""

from __future__ import annotations

from typing import Any

BASE = "Base.1.8"
IDRAC = "IDRAC.2.4"


def message(
    message_id: str,
    text: str,
    *,
    args: list[str] | tuple[str, ...] = (),
    severity: str = "Warning",
    resolution: str = "None.",
    related: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    return {
        "Message": text,
        "MessageArgs": list(args),
        "MessageArgs@odata.count": len(args),
        "MessageId": message_id,
        "RelatedProperties": list(related),
        "RelatedProperties@odata.count": len(related),
        "Resolution": resolution,
        "Severity": severity,
    }


def error_body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {
        "error": {
            "@Message.ExtendedInfo": list(messages),
            "code": f"{BASE}.GeneralError",
            "message": "A general error has occurred. See ExtendedInfo for more information",
        }
    }


def success_body() -> dict[str, Any]:
    return {
        "@Message.ExtendedInfo": [
            message(
                f"{BASE}.Success",
                "Successfully Completed Request",
                severity="OK",
                resolution="None",
            )
        ]
    }


# --- the messages the simulated iDRAC answers with ---------------------------------------------------


def session_limit() -> dict[str, Any]:
    return error_body(
        message(
            f"{IDRAC}.RAC0218",
            "The maximum number of user sessions is reached.",
            severity="Informational",
            resolution=(
                "Make sure that the number of active sessions is less than or equal to the threshold "
                "limit. To end a current session and start a new session, log out of iDRAC or end an "
                "unused session (racadm closessn -i <session id>)."
            ),
        )
    )


def bad_credentials() -> dict[str, Any]:
    return error_body(
        message(
            f"{IDRAC}.SYS415",
            "Unable to complete the operation because an invalid username and/or password is "
            "entered, and therefore authentication failed.",
            severity="Warning",
            resolution="Enter valid user name and password and retry the operation.",
        )
    )


def no_valid_session() -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.NoValidSession",
            "There is no valid session established with the implementation.",
            severity="Critical",
            resolution="Establish a session before attempting any operations.",
        )
    )


def already_on() -> dict[str, Any]:
    return error_body(
        message(
            f"{IDRAC}.PSU501",
            "Server is already powered ON.",
            severity="Informational",
            resolution="No response action is required.",
        )
    )


def already_off() -> dict[str, Any]:
    return error_body(
        message(
            f"{IDRAC}.PSU502",
            "Server is already powered OFF.",
            severity="Informational",
            resolution="No response action is required.",
        )
    )


def value_not_in_list(prop: str, value: object) -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.PropertyValueNotInList",
            f"The value {value} for the property {prop} is not in the list of acceptable values.",
            args=(str(value), prop),
            severity="Warning",
            resolution=(
                "Choose a value from the enumeration list that the implementation can support and "
                "resubmit the request if the operation failed."
            ),
            related=(f"#/{prop}",),
        )
    )


def property_missing(prop: str) -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.PropertyMissing",
            f"The property {prop} is a required property and must be included in the request.",
            args=(prop,),
            severity="Warning",
            resolution=(
                "Ensure that the property is in the request body and has a valid value and resubmit "
                "the request if the operation failed."
            ),
            related=(f"#/{prop}",),
        )
    )


def property_unknown(prop: str) -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.PropertyUnknown",
            f"The property {prop} is not in the list of valid properties for the resource.",
            args=(prop,),
            severity="Warning",
            resolution="Remove the unknown property from the request body and resubmit the request if the operation failed.",
            related=(f"#/{prop}",),
        )
    )


def property_value_type_error(prop: str, value: object) -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.PropertyValueTypeError",
            f"The value {value} for the property {prop} is of a different type than the property can accept.",
            args=(str(value), prop),
            severity="Warning",
            resolution=(
                "Correct the value for the property in the request body and resubmit the request if "
                "the operation failed."
            ),
            related=(f"#/{prop}",),
        )
    )


def malformed_json() -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.MalformedJSON",
            "The request body submitted was malformed JSON and could not be parsed by the receiving service.",
            severity="Critical",
            resolution="Ensure that the request body is valid JSON and resubmit the request.",
        )
    )


def resource_missing(uri: str) -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.ResourceMissingAtURI",
            f"The resource at the URI {uri} was not found.",
            args=(uri,),
            severity="Critical",
            resolution=("Place a valid resource at the URI or correct the URI and resubmit the request."),
        )
    )


def operation_not_allowed(method: str, uri: str) -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.OperationNotAllowed",
            f"The {method} operation is not allowed on the resource at {uri}.",
            severity="Critical",
            resolution="Do not repeat the operation with this resource.",
        )
    )


def service_unavailable(retry_s: int) -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.ServiceTemporarilyUnavailable",
            f"The service is temporarily unavailable.  Retry in {retry_s} seconds.",
            args=(str(retry_s),),
            severity="Critical",
            resolution="Wait for the indicated retry duration and retry the operation.",
        )
    )


def precondition_failed(header: str, value: str) -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.PreconditionFailed",
            f"The request header {header} has a value the service does not support ({value}).",
            args=(header, value),
            severity="Critical",
            resolution="Send OData-Version: 4.0 or leave the header out.",
        )
    )


def query_not_supported(param: str) -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.QueryNotSupported",
            f"Querying is not supported by the implementation ({param}).",
            args=(param,),
            severity="Warning",
            resolution="Remove the query parameters and resubmit the request if the operation failed.",
        )
    )


def internal_error() -> dict[str, Any]:
    return error_body(
        message(
            f"{BASE}.InternalError",
            "The request failed due to an internal service error.  The service is still operational.",
            severity="Critical",
            resolution="Resubmit the request.  If the problem persists, consider resetting the service.",
        )
    )
