"""The built-in datasets of the tabular-memorization papers, one :func:`register_dataset` each.

Column names, kinds and targets are those of the TabCutMix metadata (``info_tabcutmix.json``)
or, for datasets without one, the dataset's ``SOURCE.md`` table; the sha256 of every file is
the one ``SOURCE.md`` records. Loaders return raw units (nothing scaled or re-coded) with the
source record positions as index; :func:`~tabmem.data.datasets.load_dataset` checks columns and
sizes. The registration order here is the listing order of ``tabmem datasets``.

A new dataset is one more ``@register_dataset`` block (here, or in any module imported before
:func:`~tabmem.data.datasets.load_dataset` is called); ``tests/data/test_datasets_conformance.py``
then checks it automatically.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

import numpy as np
import pandas as pd

from tabmem.data.datasets.files import DataFile, DatasetFiles, read_csv
from tabmem.data.datasets.registry import register_dataset
from tabmem.data.datasets.splits import sklearn_split, split_by_map, tabcutmix_parts, tabddpm_split_map

__all__ = [
    "ADULT_COLUMNS",
    "CALIFORNIA_COLUMNS",
    "CARDIO_COLUMNS",
    "CASP_COLUMNS",
    "DEFAULT_COLUMNS",
    "DIABETES_COLUMNS",
    "SHOPPERS_COLUMNS",
    "WILT_COLUMNS",
    "california_from_raw",
]

_GH = "https://raw.githubusercontent.com"
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_TABDDPM_COMMIT = "ec7254ad810d34b7fe403fca1aa076acf3de274b"  # ruheyun/tab-ddpm-dp: last change of the TabDDPM files


def _gh(repo: str, commit: str, path: str) -> str:
    return f"{_GH}/{repo}/{commit}/{urllib.parse.quote(path)}"


def _tabddpm_files(dataset: str, shas: Mapping[str, str]) -> tuple[DataFile, ...]:
    return tuple(
        DataFile(
            f"tabddpm_split/{stem}.npy",
            shas[stem],
            (_gh("ruheyun/tab-ddpm-dp", _TABDDPM_COMMIT, f"data/{dataset}/{stem}.npy"),),
            required=False,
        )
        for stem in shas
    )


def _derived_split(split_sha: str, dataset: str, shas: Mapping[str, str]) -> tuple[DataFile, ...]:
    """``split_tabddpm.csv`` (optional, re-derived when absent) and the TabDDPM ``.npy`` files it comes from."""
    npy = _tabddpm_files(dataset, shas)
    split = DataFile("split_tabddpm.csv", split_sha, required=False, derived_from=tuple(f.path for f in npy))
    return (split, *npy)


ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education.num", "marital.status", "occupation",
    "relationship", "race", "sex", "capital.gain", "capital.loss", "hours.per.week", "native.country", "income",
)  # fmt: skip
_ADULT_GEN = "99c353916d474e4bd70b1f5cdc745213d205ccbf"  # llxler/TabCutMix_GEN


@register_dataset(
    "adult",
    task="binclass",
    target="income",
    columns=ADULT_COLUMNS,
    categorical=[ADULT_COLUMNS[i] for i in (1, 3, 5, 6, 7, 8, 9, 13, 14)],
    files=(
        DataFile(
            "adult.data",
            "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            (f"{_UCI}/adult/adult.data", _gh("llxler/TabCutMix_GEN", _ADULT_GEN, "data/adult/adult.data")),
        ),
        DataFile(
            "adult.test",
            "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            (f"{_UCI}/adult/adult.test", _gh("llxler/TabCutMix_GEN", _ADULT_GEN, "data/adult/adult.test")),
        ),
    ),
    source="https://archive.ics.uci.edu/dataset/2/adult",
    split="official UCI train/test files",
    sizes={"train": 32_561, "test": 16_281},
)
def _load_adult(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    opts = dict(header=None, names=list(ADULT_COLUMNS), skipinitialspace=True, keep_default_na=False, na_values=[])
    train = read_csv(files.path("adult.data"), **opts)
    test = read_csv(files.path("adult.test"), skiprows=1, **opts)
    test["income"] = test["income"].str.removesuffix(".")  # test labels are written "<=50K." / ">50K."
    return {"train": train, "test": test}


DEFAULT_COLUMNS = (
    "LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6",
    "BILL_AMT1", "BILL_AMT2", "BILL_AMT3", "BILL_AMT4", "BILL_AMT5", "BILL_AMT6",
    "PAY_AMT1", "PAY_AMT2", "PAY_AMT3", "PAY_AMT4", "PAY_AMT5", "PAY_AMT6", "default payment next month",
)  # fmt: skip


@register_dataset(
    "default",
    task="binclass",
    target="default payment next month",
    columns=DEFAULT_COLUMNS,
    categorical=[DEFAULT_COLUMNS[i] for i in (1, 2, 3, 5, 6, 7, 8, 9, 10, 23)],
    files=(
        DataFile(
            "default_of_credit_card_clients.csv",
            "5571adc7f0ce9747839d50cd4b7342b8e1c14de878849b533d02d46fa310fb0a",
            (
                _gh(
                    "sbyousuf/credit-card-default-prediction",
                    "f8f1f38aeba3fbbec61e01a9c4edd8de3263bbde",
                    "default of credit card clients.csv",
                ),
            ),
        ),
        DataFile(
            "split_tabcutmix_seed82.csv",
            "f29182b6c57aef6dde18d98e634fb8268a5cc6c04fdad99e5afa9bfd944f36b7",
            required=False,
        ),
    ),
    source="https://archive.ics.uci.edu/dataset/350/default+of+credit+card+clients",
    split="TabCutMix 90/10, numpy seed 82 (re-derived)",
    sizes={"train": 27_000, "test": 3_000},
)
def _load_default(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    # line 1 is UCI's anonymised header (X0..X23,Y), line 2 the real names; UTF-8 BOM, CRLF
    table = read_csv(files.path("default_of_credit_card_clients.csv"), header=1, encoding="utf-8-sig")
    table = table.drop(columns="ID")
    return tabcutmix_parts(files, table, "split_tabcutmix_seed82.csv")


SHOPPERS_COLUMNS = (
    "Administrative", "Administrative_Duration", "Informational", "Informational_Duration", "ProductRelated",
    "ProductRelated_Duration", "BounceRates", "ExitRates", "PageValues", "SpecialDay", "Month", "OperatingSystems",
    "Browser", "Region", "TrafficType", "VisitorType", "Weekend", "Revenue",
)  # fmt: skip


@register_dataset(
    "shoppers",
    task="binclass",
    target="Revenue",
    columns=SHOPPERS_COLUMNS,
    categorical=SHOPPERS_COLUMNS[10:],
    files=(
        DataFile(
            "online_shoppers_intention.csv",
            "b3055ee355f59134d851d32641183cb4a8b45def7124d2f50442a042f358e0d9",
            (
                f"{_UCI}/00468/online_shoppers_intention.csv",
                _gh(
                    "llxler/TabCutMix-3F7B",
                    "7ae93f08386389805db1d1206c9ecfca92a8ba22",
                    "data/shoppers/online_shoppers_intention.csv",
                ),
            ),
        ),
        DataFile(
            "split_tabcutmix_seed82.csv",
            "ff01c3adc73f1e1c23558365f4e777655a524cac45e04c657506c51bd4c673c7",
            required=False,
        ),
    ),
    source="https://archive.ics.uci.edu/dataset/468/online+shoppers+purchasing+intention+dataset",
    split="TabCutMix 90/10, numpy seed 82 (re-derived)",
    sizes={"train": 11_097, "test": 1_233},
)
def _load_shoppers(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    table = read_csv(files.path("online_shoppers_intention.csv"))
    return tabcutmix_parts(files, table, "split_tabcutmix_seed82.csv")


CARDIO_COLUMNS = (
    "age",
    "gender",
    "height",
    "weight",
    "ap_hi",
    "ap_lo",
    "cholesterol",
    "gluc",
    "smoke",
    "alco",
    "active",
    "cardio",
)
_KAGGLE_CARDIO = "https://www.kaggle.com/datasets/sulianova/cardiovascular-disease-dataset"


@register_dataset(
    "cardio",
    task="binclass",
    target="cardio",
    columns=CARDIO_COLUMNS,
    categorical=[CARDIO_COLUMNS[i] for i in (1, 6, 7, 8, 9, 10, 11)],
    files=(
        DataFile(
            "cardio_train.csv",
            "21a705d23381b0dfd6a6416da701b490744f1fc3b47e9ff3db3968c420ffa10c",
            no_download_reason=f"Kaggle requires a signed-in account; download cardio_train.csv from {_KAGGLE_CARDIO}",
        ),
        DataFile(
            "split_tabddpm.csv",
            "6a19253d5045d47841bb18a5147b4354a1ad0d087fe8f1c20241a172f0213be2",
            no_download_reason="it was derived by matching the TabDDPM cardio split files, whose categorical part is not public; "
            "copy it from the tabmem shared datasets folder",
        ),
    ),
    source=_KAGGLE_CARDIO,
    split="TabDDPM split (split_tabddpm.csv)",
    sizes={"train": 44_800, "val": 14_000, "test": 11_200},
)
def _load_cardio(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    table = read_csv(files.path("cardio_train.csv"), sep=";").drop(columns="id")
    split_map = read_csv(files.path("split_tabddpm.csv"))
    return split_by_map(table, split_map, "cardio/split_tabddpm.csv")


WILT_COLUMNS = ("GLCM_Pan", "Mean_G", "Mean_R", "Mean_NIR", "SD_Plan", "Class")


@register_dataset(
    "wilt",
    task="binclass",
    target="Class",
    columns=WILT_COLUMNS,
    categorical=["Class"],
    files=(
        DataFile(
            "wilt.csv",
            "7cbf7020c99b0b0c3487a5539b8717319ce25dcfe15ac16ad79b9d3e7812ef28",
            (
                _gh(
                    "mcavs/imbalanced_tabular_benchmark_dataset", "8924cd8d36a466a83eacc573d634e3c07d5f980b", "wilt.csv"
                ),
            ),
        ),
        *_derived_split(
            "670c7df793f4f1c5662b7f5be89d1e7d99dd61979534c8732d100335cc9e5134",
            "wilt",
            {
                "X_num_train": "3b57a83d72a3447f828495ea124151fa3405e566723eae8fc8c4cc59470fd050",
                "X_num_val": "08dfffb0e8037815f132de53cb938f0d00010d659817ff50eb84c5ccc6f89586",
                "X_num_test": "ba30e6cc7a780e70d726ef3d2971d434e1667427634cf9b5459caf17044108e5",
                "y_train": "2743985cd028e8adde73d9fde181e289ea7f79e2368255697d9fcec344be73c1",
                "y_val": "38fe09e9ad0a005fcc9ef880d34e197a755f1e6dbdb16c02e2f77d64df14f430",
                "y_test": "4380c27dbb26e00aa8706553f55aebf1276d0f01986fd6c5b91f0ecee6b22343",
            },
        ),
    ),
    source="https://archive.ics.uci.edu/dataset/285/wilt",
    split="TabDDPM split (split_tabddpm.csv, re-derived from the TabDDPM .npy files when absent)",
    sizes={"train": 3_096, "val": 775, "test": 968},
)
def _load_wilt(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    table = read_csv(files.path("wilt.csv"))
    # TabDDPM codes the class 0/1 (= Class - 1); features match at 5 decimals
    split_map = tabddpm_split_map(files, table, WILT_COLUMNS[:5], "Class", target_offset=1.0, decimals=5)
    return split_by_map(table, split_map, "wilt split map")


CALIFORNIA_COLUMNS = (
    "MedInc",
    "HouseAge",
    "AveRooms",
    "AveBedrms",
    "Population",
    "AveOccup",
    "Latitude",
    "Longitude",
    "MedHouseVal",
)


def california_from_raw(raw: pd.DataFrame) -> pd.DataFrame:
    """scikit-learn's ``fetch_california_housing`` layout from the StatLib columns (its documented definition)."""
    households = raw["households"]
    return pd.DataFrame(
        {
            "MedInc": raw["medianIncome"],
            "HouseAge": raw["housingMedianAge"],
            "AveRooms": raw["totalRooms"] / households,
            "AveBedrms": raw["totalBedrooms"] / households,
            "Population": raw["population"],
            "AveOccup": raw["population"] / households,
            "Latitude": raw["latitude"],
            "Longitude": raw["longitude"],
            "MedHouseVal": raw["medianHouseValue"] / 100_000,
        }
    ).astype(np.float64)


@register_dataset(
    "california",
    task="regression",
    target="MedHouseVal",
    columns=CALIFORNIA_COLUMNS,
    categorical=[],
    files=(
        DataFile(
            "cal_housing_raw.csv",
            "033804e189f49ddf4a2666d6a67c9dda842d6dc7b64980eb8005633980c1afba",
            (_gh("mcobzarenco/test-datasets", "6c2eccaf55730e4beea49d6270ef07c8e52a9b47", "california_housing.csv"),),
            required=False,
        ),
        DataFile(
            "california.csv",
            "94ef369b909f5c725340b512b7c9a05c1550a554b6592d29303990e3ba521a1f",
            required=False,
            derived_from=("cal_housing_raw.csv",),
        ),
        *_derived_split(
            "180fbe823981164b11ce9bf8b0d1d18233dae582b071ba55e33458e3757ef787",
            "california",
            {
                "X_num_train": "1579afba8fc21fe576de46ab0e04692162542cd6a54a29aa8b8db35b34633831",
                "X_num_val": "fcdc5aa78d48174953959f09f418abb6ce17133cf0297c2f3c52bbe533abb4b3",
                "X_num_test": "509dbf1d10a85301b2a560d1cce38b4acb96327e20414e7aea4ff1c0848b6827",
                "y_train": "219117b4a5c0b18aea5aa5c1ddb591b60664c51b8e5c983c486ab43ab69dd945",
                "y_val": "4e766e32aef456f619ab69f146ebfb9dc41a9eeb4ef3a873ca392b7ddce35825",
                "y_test": "93bfc0e8af7908026ab9d20cc3798579d97f4e5bfa558d39e5b03f5968ae078c",
            },
        ),
    ),
    source="https://www.dcc.fc.up.pt/~ltorgo/Regression/cal_housing.html",
    split="TabDDPM split (split_tabddpm.csv, re-derived from the TabDDPM .npy files when absent)",
    sizes={"train": 13_209, "val": 3_303, "test": 4_128},
)
def _load_california(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    if files.exists("california.csv"):
        table = read_csv(files.path("california.csv"))
    else:
        table = california_from_raw(read_csv(files.path("cal_housing_raw.csv"), skipinitialspace=True))
    split_map = tabddpm_split_map(files, table, CALIFORNIA_COLUMNS[:8], "MedHouseVal", as_float32=True)
    return split_by_map(table, split_map, "california split map")


CASP_COLUMNS = ("RMSD", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9")


@register_dataset(
    "casp",
    task="regression",
    target="RMSD",
    columns=CASP_COLUMNS,
    categorical=[],
    files=(
        DataFile(
            "CASP.csv",
            "712d2759f8113622a3ba93a47e451397147df946111f6ffdd8c655385d564aef",
            (
                f"{_UCI}/00265/CASP.csv",
                _gh("himabindu26/BioInformatics", "4331e93121287d4300991ebe9de49ce62b3b93a1", "CASP.csv"),
            ),
        ),
    ),
    source="https://archive.ics.uci.edu/dataset/265/physicochemical+properties+of+protein+tertiary+structure",
    split="80/20, train_test_split(train_size=0.8, random_state=42) (LevAtt paper)",
    sizes={"train": 36_584, "test": 9_146},
)
def _load_casp(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    return sklearn_split(read_csv(files.path("CASP.csv")))


DIABETES_COLUMNS = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "target")


@register_dataset(
    "diabetes",
    task="regression",
    target="target",
    columns=DIABETES_COLUMNS,
    categorical=["sex"],
    source="scikit-learn (sklearn.datasets.load_diabetes, bundled; Efron et al. 2004)",
    split="80/20, train_test_split(train_size=0.8, random_state=42)",
    sizes={"train": 353, "test": 89},
)
def _load_diabetes(files: DatasetFiles) -> dict[str, pd.DataFrame]:
    from sklearn.datasets import load_diabetes

    table = load_diabetes(scaled=False, as_frame=True).frame
    table["sex"] = table["sex"].astype(np.int64)  # raw codes 1/2 (floats in scikit-learn's frame)
    return sklearn_split(table[list(DIABETES_COLUMNS)])
