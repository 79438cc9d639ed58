"""The admin endpoints: staff only, through the Django admin's session and its CSRF token, each needing the
Django model permission its admin action needs (docs/staff.md#permissions)."""

from __future__ import annotations

from typing import Any, NoReturn

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import BasePermission, IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import Account
from accounts.services import account_restore
from core.api.envelope import iso_utc
from core.api.exceptions import ApiError, CsrfFailed
from core.api.schema import ErrorAnswer, error_responses
from core.api.views import ApiView
from core.errors import AccountNotDeleted, UserNotFound
from staff.selectors import account_of_user
from staff.services import account_erase


class StaffSignInRequired(ApiError):
    status = 403
    code = "staff_sign_in_required"
    message = "Sign in to the admin as staff first; API keys are not accepted here"


class StaffOnly(ApiError):
    """A signed-in user who is not staff (an account holder)."""

    status = 403
    code = "staff_only"
    message = "Staff only"


MISSING_PERMISSION = "Your staff user lacks the permission {permission}"


class StaffPermissionMissing(ApiError):
    status = 403
    code = "staff_permission_missing"

    def __init__(self, *, permission: str) -> None:
        self.message = MISSING_PERMISSION.format(permission=permission)
        super().__init__()


SIGN_IN_REQUIRED = StaffSignInRequired.message
STAFF_ONLY = StaffOnly.message
STAFF_ERRORS = error_responses(
    403,
    404,
    descriptions={
        403: ErrorAnswer(
            "No staff session (API keys are not accepted), a user who is not staff, a staff user without the "
            "operation's permission, or a missing CSRF token.",
            StaffSignInRequired,
            StaffOnly,
            StaffPermissionMissing,
            CsrfFailed,
        ),
        404: ErrorAnswer("No user with this id has a NotifyHub account.", UserNotFound),
    },
)


class HoldsRequiredPermission(BasePermission):
    """The staff user holds the view's ``required_permission`` (a superuser holds every one)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user.has_perm(view.required_permission))


# Grouped apart from what clients call, last in Swagger UI (SPECTACULAR_SETTINGS["TAGS"]).
@extend_schema(tags=["staff"])
class StaffApiView(ApiView):
    """Signed in to the admin as staff holding ``required_permission``; a POST or DELETE also needs the CSRF token."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAdminUser, HoldsRequiredPermission]
    # The Django model permission ("app_label.codename") of the admin action doing the same.
    required_permission: str

    def permission_denied(self, request: Request, message: str | None = None, code: str | None = None) -> NoReturn:
        # DRF would answer a missing session with its own words; these name the way in. (Without one,
        # request.user is None: the API sets no anonymous user.)
        if request.user is None or not request.user.is_authenticated:
            raise StaffSignInRequired()
        if not request.user.is_staff:
            raise StaffOnly()
        raise StaffPermissionMissing(permission=self.required_permission)

    @staticmethod
    def account(user_id: int) -> Account:
        account = account_of_user(user_id=user_id)
        if account is None:
            raise UserNotFound()
        return account


class RestoreUserView(StaffApiView):
    required_permission = "accounts.change_account"

    @extend_schema(
        summary="Restore a deleted user (staff)",
        description=(
            "Undoes a soft delete: the user can sign in again and the account's API key works again. "
            "Needs the permission `accounts.change_account`."
        ),
        request=None,
        responses={
            200: inline_serializer(
                "RestoredUser",
                {
                    "userId": serializers.IntegerField(),
                    "email": serializers.CharField(),
                    "isActive": serializers.BooleanField(),
                    "deletedAt": serializers.DateTimeField(allow_null=True),
                },
            ),
            **STAFF_ERRORS,
            **error_responses(
                411, 409, descriptions={409: ErrorAnswer("The user's account is not deleted.", AccountNotDeleted)}
            ),
        },
    )
    def post(self, request: Request, user_id: int) -> Response:
        account = account_restore(account=self.account(user_id))
        user = account.user
        deleted_at = iso_utc(account.deleted_at) if account.deleted_at else None
        return Response({"userId": user.pk, "email": user.email, "isActive": user.is_active, "deletedAt": deleted_at})


class EraseUserView(StaffApiView):
    required_permission = "accounts.delete_account"

    @extend_schema(
        summary="Delete a user and all their data for good (staff)",
        description=(
            "Removes the user, the account, its API and provider keys, jobs, delivery logs, attachments, events and "
            "sending domain (at every provider too): irreversible. The database part is one transaction. `deleted` "
            "counts what went; `warnings` names each provider that could not remove the domain. Needs the permission "
            "`accounts.delete_account`."
        ),
        request=None,
        responses={
            200: inline_serializer(
                "ErasedUser",
                {
                    "userId": serializers.IntegerField(),
                    "email": serializers.CharField(),
                    "deleted": serializers.DictField(child=serializers.IntegerField()),
                    "warnings": inline_serializer(
                        "ProviderWarning",
                        {"provider": serializers.CharField(), "reason": serializers.CharField()},
                        many=True,
                    ),
                },
            ),
            **STAFF_ERRORS,
        },
    )
    def delete(self, request: Request, user_id: int) -> Response:
        erased = account_erase(account=self.account(user_id))
        body: dict[str, Any] = {
            "userId": user_id,
            "email": erased.email,
            "deleted": erased.contents.as_dict(),
            "warnings": erased.warnings,
        }
        return Response(body)
