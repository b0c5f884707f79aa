"""Data contracts in DataHub: a `dataContract` entity whose `rawContract` is the ODCS document, verbatim.

Every apply is a new version of the aspect, so an earlier contract is never lost (DataHub keeps the history).
"""

from __future__ import annotations

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import contract_urn
from guard.contract import Contract

__all__ = ["contract_mcps", "read_raw_contract"]


def contract_mcps(contract: Contract, raw_yaml: str) -> list[MCP]:
    urn = contract_urn(contract.dataset_urn)
    return [
        MCP(entityUrn=urn, aspect=s.DataContractPropertiesClass(entity=contract.dataset_urn, rawContract=raw_yaml)),
        MCP(entityUrn=urn, aspect=s.DataContractStatusClass(state=s.DataContractStateClass.ACTIVE)),
    ]


def read_raw_contract(port: MetadataPort, dataset: str) -> str | None:
    properties = port.aspect(contract_urn(dataset), s.DataContractPropertiesClass)
    return properties.rawContract if properties is not None and properties.rawContract else None
